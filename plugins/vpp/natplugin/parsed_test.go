package natplugin

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// TestCreationUsesWhatValidateParsed: what Validate parsed is kept for the value's
// Create and forgotten once used (no copy stays at rest); an update or a value only
// validated keeps nothing of the old value either.
func TestCreationUsesWhatValidateParsed(t *testing.T) {
	e := newEnv(t)
	e.enableNAT()
	_, d := newDNat44(e.deps())
	v := testDNAT("svc")
	key := nat.DNAT44Key("svc")
	if err := d.validate(key, v); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.parsed.byValue[v]; !ok || d.parsed.size != 6 {
		t.Fatalf("validated value not kept: %d mappings held", d.parsed.size)
	}
	if err := d.update(nil, v); err != nil {
		t.Fatal(err)
	}
	if len(d.parsed.byValue) != 0 || d.parsed.size != 0 {
		t.Errorf("%d values (%d mappings) still held after the creation", len(d.parsed.byValue), d.parsed.size)
	}
	expectRetrieved(t, dnatDescriptor44(e.deps()), map[string]proto.Message{key: v})
	if err := d.validate(key, &nat.DNat44{Label: "svc"}); err != nil {
		t.Fatal(err)
	}
	if err := d.validate(key, &nat.DNat44{}); err == nil {
		t.Fatal("invalid value accepted")
	}
	if len(d.parsed.byValue) != 1 {
		t.Errorf("%d values held, want only the valid one", len(d.parsed.byValue))
	}
}

// TestRestagedValuesKeepNoParsedMappings: a transaction or a full resync restaging every
// value unchanged (new messages, same content) leaves nothing of what Validate parsed
// (the values are not created again).
func TestRestagedValuesKeepNoParsedMappings(t *testing.T) {
	e := newEnv(t)
	a := newAgent(t, e.conn)
	if err := a.commit(context.Background(), services(50, 4)); err != nil {
		t.Fatal(err)
	}
	if n := a.nat.dnat.parsed.size; n != 0 {
		t.Errorf("%d parsed mappings held after the creation", n)
	}
	for _, ctx := range []context.Context{context.Background(), kvapi.WithResync(context.Background(), kvapi.FullResync, false)} {
		if err := a.commit(ctx, services(50, 4)); err != nil {
			t.Fatal(err)
		}
		if n := a.nat.dnat.parsed.size; n != 0 {
			t.Errorf("%d parsed mappings held after a transaction that changed nothing", n)
		}
	}
}

// TestParsedCacheIsBounded: values validated but never created are dropped oldest
// first once the cache holds maxParsedMappings mappings.
func TestParsedCacheIsBounded(t *testing.T) {
	var c parsedCache
	const perValue = 1000
	var vals []*nat.DNat44
	for i := range 3 * maxParsedMappings / perValue {
		v := &nat.DNat44{Label: fmt.Sprint(i)}
		vals = append(vals, v)
		c.put(v, make([]mapping, perValue))
		if i%3 == 0 {
			c.take(v) // created
		}
		if c.size > maxParsedMappings {
			t.Fatalf("holds %d mappings, more than %d", c.size, maxParsedMappings)
		}
	}
	if _, ok := c.take(vals[len(vals)-1]); !ok {
		t.Error("the newest value was dropped")
	}
	if _, ok := c.take(vals[1]); ok {
		t.Error("the oldest value is still held")
	}
	if len(c.order) > 2*len(c.byValue)+1024+1 {
		t.Errorf("order lists %d values for %d held", len(c.order), len(c.byValue))
	}
	c.put(vals[0], make([]mapping, maxParsedMappings+1))
	if _, ok := c.byValue[vals[0]]; ok {
		t.Error("a value larger than the bound was kept")
	}
}
