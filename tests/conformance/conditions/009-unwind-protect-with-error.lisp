(let ((cleaned nil))
  (print (handler-case
             (unwind-protect (error "fail")
               (setq cleaned t))
           (error () 'handled)))
  (print cleaned))
(terpri)
