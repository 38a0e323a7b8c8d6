package main

import (
	"path/filepath"
	"testing"

	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/core"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/cnatplugin"
)

// TestAgentRegistersTheCNATDescriptors: the agent's composition holds the VPP cnat
// plugin wired to the agent's scheduler and govpp connection, and once started it has
// registered every cnat descriptor with that scheduler (the cnat service renderer's
// values would otherwise wait for a descriptor forever).
func TestAgentRegistersTheCNATDescriptors(t *testing.T) {
	asm, err := infra.Assemble(testCells(t, false)...)
	if err != nil {
		t.Fatal(err)
	}
	var cnat *cnatplugin.Plugin
	var sched *kvscheduler.Scheduler
	var gv *govppmux.Plugin
	for _, p := range asm.Plugins {
		switch p := p.(type) {
		case *cnatplugin.Plugin:
			cnat = p
		case *kvscheduler.Scheduler:
			sched = p
		case *govppmux.Plugin:
			gv = p
		}
	}
	if cnat == nil || sched == nil || gv == nil {
		t.Fatalf("the agent has cnat plugin %v, scheduler %v, govppmux %v", cnat != nil, sched != nil, gv != nil)
	}
	if cnat.Scheduler != sched || cnat.GoVPP != gv {
		t.Fatal("the cnat plugin is not wired to the agent's scheduler and govppmux")
	}
	if err := sched.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sched.Close() })
	// govppmux's connection is replaced by one to a simulator: this test is about the
	// registration, not the connection.
	sock := filepath.Join(t.TempDir(), "api.sock")
	sim, err := vppsim.New(vppsim.Options{SocketPath: sock})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	conn, err := core.Connect(socketclient.NewVppClient(sock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Disconnect)
	cnat.GoVPP = conn
	if err := cnat.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cnat.Close() })
	for _, name := range []string{
		cnatplugin.TranslationSetDescriptorName, cnatplugin.SnatAddressesDescriptorName, cnatplugin.SnatPolicyDescriptorName,
		cnatplugin.SnatExcludePrefixDescriptorName, cnatplugin.SnatPolicyInterfaceDescriptorName, cnatplugin.SnatFeatureDescriptorName,
	} {
		if _, err := sched.DumpValuesByDescriptor(name, kvapi.NBView); err != nil {
			t.Errorf("descriptor %s: %v", name, err)
		}
	}
}
