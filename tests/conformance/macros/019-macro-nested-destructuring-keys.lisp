(defmacro defrecord (name (&rest fields) &key (prefix "GET-"))
  `(progn
     ,@(loop for f in fields
             for i from 0
             collect `(defun ,(intern (concatenate 'string prefix (symbol-name f)))
                          (rec) (nth ,i rec)))
     ',name))
(print (defrecord point (x y)))
(print (get-y (list 3 4)))
(print (defrecord pair (left right) :prefix "P-"))
(print (p-left '(l r)))
(terpri)
