package vppbase

import (
	"context"
	"errors"
	"fmt"
	"testing"

	govppapi "go.fd.io/govpp/api"

	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// TestRetryRule is the one test of the retry rule every VPP plugin uses: invalid
// values, wrong-typed values and the VPP retvals that reject a request for what it
// says are final; missing objects, busy VPP, syscalls and lost replies are retried.
func TestRetryRule(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("create x: ip_route_add_del: %w", err) }
	errNoNIC := errors.New("NIC does not exist")
	tests := []struct {
		name      string
		err       error
		retriable bool
	}{
		{"invalid value", kvapi.NewInvalidValueError(errors.New("bad"), "mtu"), false},
		{"wrapped invalid value", wrap(kvapi.NewInvalidValueError(errors.New("bad"))), false},
		{"wrong-typed value", wrap(fmt.Errorf("x: %w", kvapi.ErrInvalidValueType)), false},
		{"INVALID_VALUE (a field out of its domain)", wrap(govppapi.INVALID_VALUE), false},
		{"INVALID_VALUE_2", wrap(govppapi.INVALID_VALUE_2), false},
		{"INVALID_ARGUMENT", wrap(govppapi.INVALID_ARGUMENT), false},
		{"UNIMPLEMENTED", wrap(govppapi.UNIMPLEMENTED), false},
		{"FEATURE_DISABLED", wrap(govppapi.FEATURE_DISABLED), false},
		{"BD_ID_EXCEED_MAX", wrap(govppapi.BD_ID_EXCEED_MAX), false},
		{"DUPLICATE_IF_ADDRESS", wrap(govppapi.DUPLICATE_IF_ADDRESS), false},
		{"NO_SUCH_ENTRY (may appear)", wrap(govppapi.NO_SUCH_ENTRY), true},
		{"NO_SUCH_FIB (the VRF may be created)", wrap(govppapi.NO_SUCH_FIB), true},
		{"INVALID_SW_IF_INDEX (the interface may be created)", wrap(govppapi.INVALID_SW_IF_INDEX), true},
		{"VALUE_EXIST (a lost reply)", wrap(govppapi.VALUE_EXIST), true},
		{"UNSUPPORTED (NAT not enabled yet)", wrap(govppapi.UNSUPPORTED), true},
		{"BUSY", wrap(govppapi.BUSY), true},
		{"UNSPECIFIED", wrap(govppapi.UNSPECIFIED), true},
		{"SYSCALL_ERROR_3", wrap(govppapi.SYSCALL_ERROR_3), true},
		{"reply timeout", wrap(context.DeadlineExceeded), true},
		{"lost connection", wrap(errors.New("connection closed")), true},
	}
	for _, tt := range tests {
		if got := IsRetriable(tt.err); got != tt.retriable {
			t.Errorf("%s: IsRetriable(%v) = %v, want %v", tt.name, tt.err, got, tt.retriable)
		}
		if got := Retriable(errNoNIC)(tt.err); got != tt.retriable {
			t.Errorf("%s: Retriable(extra)(%v) = %v, want %v", tt.name, tt.err, got, tt.retriable)
		}
	}
	if Retriable(errNoNIC)(fmt.Errorf("create: %w", errNoNIC)) {
		t.Error("a plugin's own permanent error is retried")
	}
	if !IsRetriable(fmt.Errorf("create: %w", errNoNIC)) {
		t.Error("the base rule does not know the plugin's error and must retry it")
	}
}

func TestIsRetval(t *testing.T) {
	err := fmt.Errorf("x: %w", govppapi.NO_SUCH_FIB)
	if !IsRetval(err, govppapi.NO_SUCH_FIB) || IsRetval(err, govppapi.NO_SUCH_ENTRY) || IsRetval(errors.New("x"), govppapi.NO_SUCH_FIB) {
		t.Error("IsRetval does not match the wrapped retval only")
	}
}
