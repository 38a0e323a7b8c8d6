package vppbase

import (
	"errors"

	govppapi "go.fd.io/govpp/api"

	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// Permanent lists the VPP retvals that are never retried (see the package
// documentation for why each is final).
var Permanent = []govppapi.VPPApiError{
	govppapi.INVALID_VALUE,
	govppapi.INVALID_VALUE_2,
	govppapi.INVALID_ARGUMENT,
	govppapi.UNIMPLEMENTED,
	govppapi.NON_ETHERNET,
	govppapi.SAME_SRC_DST,
	govppapi.INVALID_DECAP_NEXT,
	govppapi.FEATURE_DISABLED,
	govppapi.BD_ID_EXCEED_MAX,
	govppapi.BD_NOT_MODIFIABLE,
	govppapi.BD_ALREADY_HAS_BVI,
	govppapi.INVALID_REGISTRATION,
	govppapi.DUPLICATE_IF_ADDRESS,
}

// IsRetriable is the retry rule of every VPP descriptor (KVDescriptor.
// IsRetriableFailure): false for an invalid value, a value of the wrong type and the
// Permanent VPP retvals, true for everything else.
func IsRetriable(err error) bool {
	if err == nil {
		return true
	}
	var ive *kvapi.InvalidValueError
	if errors.As(err, &ive) || errors.Is(err, kvapi.ErrInvalidValueType) {
		return false
	}
	var vppErr govppapi.VPPApiError
	if errors.As(err, &vppErr) {
		for _, p := range Permanent {
			if vppErr == p {
				return false
			}
		}
	}
	return true
}

// Retriable returns IsRetriable extended with a plugin's own permanent errors
// (matched with errors.Is).
func Retriable(permanent ...error) func(error) bool {
	return func(err error) bool {
		for _, p := range permanent {
			if errors.Is(err, p) {
				return false
			}
		}
		return IsRetriable(err)
	}
}

// IsRetval tells whether err is (or wraps) the VPP error code.
func IsRetval(err error, code govppapi.VPPApiError) bool {
	var e govppapi.VPPApiError
	return errors.As(err, &e) && e == code
}
