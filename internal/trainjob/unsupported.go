package trainjob

import "errors"

// UnsupportedError says a runtime asks for something copse cannot run. It is
// final for the TrainJob: retrying cannot help.
type UnsupportedError struct {
	Reason string
}

func (e *UnsupportedError) Error() string { return e.Reason }

// IsUnsupported reports whether err is, or wraps, an UnsupportedError.
func IsUnsupported(err error) bool {
	var unsupported *UnsupportedError
	return errors.As(err, &unsupported)
}
