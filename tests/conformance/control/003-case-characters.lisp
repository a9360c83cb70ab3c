(defun char-kind (c)
  (case c
    ((#\a #\e #\i #\o #\u) :vowel)
    (#\space :space)
    (t :other)))
(print (map 'list #'char-kind "hi you"))
(terpri)
