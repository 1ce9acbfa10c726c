package panicky
