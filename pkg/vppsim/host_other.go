//go:build !linux

package vppsim

import (
	"errors"

	"github.com/sirupsen/logrus"
)

// newHostNet reports that Linux mode needs Linux.
func newHostNet(logrus.FieldLogger) (hostNet, error) {
	return nil, errors.New("linux mode is only available on Linux")
}
