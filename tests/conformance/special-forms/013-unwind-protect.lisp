(defvar *log* nil)
(print (catch 'stop
         (unwind-protect
              (progn (push 'body *log*)
                     (throw 'stop 'thrown)
                     (push 'unreached *log*))
           (push 'cleanup *log*))))
(print (reverse *log*))
(print (unwind-protect 'value (push 'second-cleanup *log*)))
(print (length *log*))
(terpri)
