package main

import (
	"errors"
	"fmt"
)

// usageError marks an error in what the user typed (a flag value, an
// argument); main exits with status 2 for it.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// usagef returns a usageError with a formatted message.
func usagef(format string, a ...any) error {
	return usageError{fmt.Errorf(format, a...)}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
