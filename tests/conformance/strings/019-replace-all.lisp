(defun replace-all (string old new)
  (with-output-to-string (out)
    (loop with start = 0
          for pos = (search old string :start2 start)
          do (write-string string out :start start :end (or pos (length string)))
          when pos do (write-string new out)
          while pos
          do (setf start (+ pos (length old))))))
(print (replace-all "a-b-c" "-" "+"))
(print (replace-all "hello world" "o" "0"))
(print (replace-all "none" "x" "y"))
(terpri)
