package nsplugin

import "errors"

var (
	// ErrNamespaceNotFound is matched (errors.Is) by the error for a
	// namespace that does not exist, or not yet: a missing path, a process
	// that is gone, a NAME file that is not bound yet.
	ErrNamespaceNotFound = errors.New("network namespace not found")
	// ErrUnsupportedReference is wrapped by the error for a reference type
	// nsplugin cannot resolve (MICROSERVICE, unknown types).
	ErrUnsupportedReference = errors.New("unsupported namespace reference")

	errNotNamespace    = errors.New("not a namespace file (not bound yet?)")
	errNotNetNamespace = errors.New("not a network namespace")
)

// NamespaceError is an operation on a namespace that failed; it names the
// namespace by its path.
type NamespaceError struct {
	// Path is the namespace file.
	Path string
	// Op is what failed ("open", "enter", ...).
	Op string
	// Err is the underlying error (an errno for system calls).
	Err error
	// NotFound is set when the namespace does not exist (yet).
	NotFound bool
}

// Error implements error.
func (e *NamespaceError) Error() string {
	msg := "network namespace " + e.Path + ": " + e.Op + ": " + e.Err.Error()
	if e.NotFound {
		msg += " (namespace not found)"
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *NamespaceError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNamespaceNotFound) true for a missing namespace.
func (e *NamespaceError) Is(target error) bool {
	return target == ErrNamespaceNotFound && e.NotFound
}
