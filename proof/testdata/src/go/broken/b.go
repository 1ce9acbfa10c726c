package broken

func Old() int { return 1 }
