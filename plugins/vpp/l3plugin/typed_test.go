package l3plugin

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// TestDescriptorsRejectWrongTypedValues: every L3 descriptor given a value of another
// model type reports an invalid-value error at Validate and an error at Create, and
// sends nothing to VPP (before the typed adapter such a value became an empty message).
func TestDescriptorsRejectWrongTypedValues(t *testing.T) {
	e := newEnv(t)
	wrong := &l3.VrfTable{Id: 5}
	cases := []struct {
		desc *kvapi.KVDescriptor
		key  string
		bad  proto.Message
	}{
		{NewRouteDescriptor(e.deps()), l3.RouteKey(0, "10.1.0.0/16", "192.168.1.1"), wrong},
		{NewARPDescriptor(e.deps()), l3.ARPEntryKey("loop0", "10.0.0.1"), wrong},
		{NewProxyARPDescriptor(e.deps()), l3.ProxyARPKey, wrong},
		{NewIPScanNeighborDescriptor(e.deps()), l3.IPScanNeighborKey, wrong},
		{NewVrfTableDescriptor(e.deps()), l3.VrfTableKey(5, l3.VrfTable_IPV4), &l3.Route{}},
	}
	e.sim.ResetMessageCounts()
	for _, c := range cases {
		err := c.desc.Validate(c.key, c.bad)
		var ive *kvapi.InvalidValueError
		if !errors.As(err, &ive) || !errors.Is(err, kvapi.ErrInvalidValueType) || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s: Validate(%T) = %v, want an invalid-value error naming the key", c.desc.Name, c.bad, err)
		}
		if _, err := c.desc.Create(c.key, c.bad); !errors.Is(err, kvapi.ErrInvalidValueType) {
			t.Errorf("%s: Create(%T) = %v", c.desc.Name, c.bad, err)
		}
	}
	if n := e.sim.TotalMessageCount(); n != 0 {
		t.Errorf("wrong-typed values sent %d message(s) to VPP: %v", n, e.sim.MessageCounts())
	}
}
