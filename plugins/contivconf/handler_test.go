package contivconf

import (
	"errors"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

func TestResyncResolvesNodeConfigAgain(t *testing.T) {
	nics := []string{"GigabitEthernet0/8/0"}
	p := &Plugin{Deps: Deps{NodeName: "n1", DumpDPDKInterfaces: func() ([]string, error) { return nics, nil }}}
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	if !p.HandlesEvent(api.NewDBResync()) || p.HandlesEvent(&api.KubeStateChange{}) {
		t.Fatal("HandlesEvent must select resyncs only")
	}
	nics = []string{"GigabitEthernet0/9/0"}
	if err := p.Resync(api.NewDBResync(), nil, 2, nil); err != nil {
		t.Fatal(err)
	}
	if got := p.GetMainInterfaceName(); got != "GigabitEthernet0/9/0" {
		t.Errorf("main interface after resync = %q", got)
	}
}

func TestStartupResyncFailureIsFatal(t *testing.T) {
	fail := false
	p := &Plugin{Deps: Deps{NodeName: "n1", DumpDPDKInterfaces: func() ([]string, error) {
		if fail {
			return nil, errors.New("VPP not connected")
		}
		return nil, nil
	}}}
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	fail = true
	if err := p.Resync(api.NewDBResync(), nil, 1, nil); !api.IsFatal(err) {
		t.Errorf("startup resync error = %v, want fatal", err)
	}
	if err := p.Resync(api.NewDBResync(), nil, 2, nil); err == nil || api.IsFatal(err) {
		t.Errorf("later resync error = %v, want a plain error", err)
	}
}
