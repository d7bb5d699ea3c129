x = 1
raise ImportError("needs a missing dependency")
