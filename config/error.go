package config

// Error is a configuration that stops a command before it starts (exit
// code 2). Its message has one line per problem, each naming the variable
// or flag to change.
type Error struct{ Err error }

func (e Error) Error() string { return e.Err.Error() }
func (e Error) Unwrap() error { return e.Err }
