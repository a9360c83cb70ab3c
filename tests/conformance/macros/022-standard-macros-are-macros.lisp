;; the standard macros are macros to a program: macro-function finds them,
;; special-operator-p is true only for special operators
(defmacro twice (x) `(* 2 ,x))
(print (not (null (macro-function 'when))))
(print (list (special-operator-p 'when) (special-operator-p 'if) (macro-function 'car)
             (macro-function 'if) (not (null (macro-function 'loop)))))
(print (funcall (macro-function 'when) '(when a b c) nil))
(print (funcall (macro-function 'unless) '(unless a b) nil))
(print (funcall (macro-function 'twice) '(twice 5) nil))
(print (mapcar (lambda (s) (not (null (macro-function s))))
               '(and or cond case dolist dotimes do loop incf decf push pop setf defun
                 defmacro let let* progn prog1 multiple-value-bind destructuring-bind
                 handler-case unless check-type assert psetf rotatef lambda)))
(print (mapcar #'special-operator-p
               '(block catch eval-when flet function go if labels let let* load-time-value
                 locally macrolet multiple-value-call multiple-value-prog1 progn progv quote
                 return-from setq symbol-macrolet tagbody the throw unwind-protect)))
(print (mapcar #'special-operator-p '(and or cond dolist loop push setf defun car)))
(print (multiple-value-list (macroexpand-1 '(unless a b))))
(print (macroexpand-1 '(return 5)))
