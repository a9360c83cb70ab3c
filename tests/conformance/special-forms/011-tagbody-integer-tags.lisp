(let ((out '()))
  (tagbody
     (go 20)
   10
     (push 'ten out)
     (go 30)
   20
     (push 'twenty out)
     (go 10)
   30
     (push 'thirty out))
  (print (reverse out)))
(terpri)
