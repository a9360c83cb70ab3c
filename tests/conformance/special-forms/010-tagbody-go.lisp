(let ((i 0) (acc nil))
  (tagbody
   start
     (when (>= i 5) (go end))
     (push i acc)
     (incf i)
     (go start)
   end)
  (print (nreverse acc)))
(print (tagbody 1 2))
(terpri)
