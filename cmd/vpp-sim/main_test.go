package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/adapter/statsclient"
	"go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/vpe"
	"go.fd.io/govpp/core"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

func TestBadFlagsExitWithUsageError(t *testing.T) {
	tests := [][]string{
		{"-log-level", "loud"},
		{"-fail", "create_loopback"},
		{"-fail", "no_such_message=-1"},
		{"-delay", "show_version=soon"},
		{"extra-arg"},
		{"-no-such-flag"},
	}
	for _, args := range tests {
		var stderr bytes.Buffer
		if code := run(context.Background(), args, &bytes.Buffer{}, &stderr); code != 2 {
			t.Errorf("run(%q) = %d, want 2 (stderr: %s)", args, code, stderr.String())
		}
	}
	// A NIC bound to a Linux interface that is not there fails at start.
	for _, args := range [][]string{
		{"-socket", filepath.Join(t.TempDir(), "a.sock"), "-nic", "GigabitEthernet0/8/0=nosuchlinux0"},
		{"-socket", filepath.Join(t.TempDir(), "b.sock"), "-nic", "GigabitEthernet0/8/0="},
	} {
		var stderr bytes.Buffer
		if code := run(context.Background(), args, &bytes.Buffer{}, &stderr); code != 1 || !strings.Contains(stderr.String(), "GigabitEthernet0/8/0") {
			t.Errorf("run(%q) = %d, want 1 naming the NIC (stderr: %s)", args, code, stderr.String())
		}
	}
	var stdout bytes.Buffer
	if code := run(context.Background(), []string{"-version"}, &stdout, &bytes.Buffer{}); code != 0 || !strings.Contains(stdout.String(), "vpp-sim") {
		t.Errorf("-version: %d %q", code, stdout.String())
	}
}

func TestRunStopsWhenContextIsCancelled(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-socket", sock, "-log-level", "error"}, &bytes.Buffer{}, &bytes.Buffer{})
	}()
	testkit.Eventually(t, 10*time.Second, "socket "+sock, func() error { _, err := os.Stat(sock); return err })
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit code %d", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return")
	}
}

// TestBinaryServesInterfacesAndStopsOnSIGTERM builds the binary, starts it
// on a temporary socket with two NICs and a failure injection, lists the
// interfaces with a real govpp client and stops it with SIGTERM.
func TestBinaryServesInterfacesAndStopsOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "vpp-sim")
	if err := testkit.GoBuild("", ".", bin, "."); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "run", "api.sock")
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "-socket", sock, "-nic", "GigabitEthernet0/8/0,GigabitEthernet0/9/0",
		"-fail", "create_loopback=-13:1", "-delay", "show_version=1ms", "-log-level", "debug")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	testkit.Eventually(t, 10*time.Second, "socket "+sock, func() error { _, err := os.Stat(sock); return err })

	conn, err := core.Connect(socketclient.NewVppClient(sock))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := conn.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	ch.SetReplyTimeout(2 * time.Second)
	ver := &vpe.ShowVersionReply{}
	if err := ch.SendRequest(&vpe.ShowVersion{}).ReceiveReply(ver); err != nil || ver.Version != "25.10-release" {
		t.Fatalf("show_version: %+v %v", ver, err)
	}
	var names []string
	mr := ch.SendMultiRequest(&interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	for {
		d := &interfaces.SwInterfaceDetails{}
		last, err := mr.ReceiveReply(d)
		if err != nil {
			t.Fatal(err)
		}
		if last {
			break
		}
		names = append(names, d.InterfaceName)
	}
	if strings.Join(names, " ") != "local0 GigabitEthernet0/8/0 GigabitEthernet0/9/0" {
		t.Errorf("interfaces: %v", names)
	}
	err = ch.SendRequest(&interfaces.CreateLoopback{}).ReceiveReply(&interfaces.CreateLoopbackReply{})
	var ve api.VPPApiError
	if !errors.As(err, &ve) || ve != -13 {
		t.Errorf("injected failure: %v", err)
	}
	if err := ch.SendRequest(&interfaces.CreateLoopback{}).ReceiveReply(&interfaces.CreateLoopbackReply{}); err != nil {
		t.Errorf("second create_loopback: %v", err)
	}
	ch.Close()
	conn.Disconnect()

	// The stats segment is served beside the API socket, as VPP's
	// /run/vpp/stats.sock beside /run/vpp/api.sock.
	statsSock := filepath.Join(dir, "run", "stats.sock")
	sc := statsclient.NewStatsClient(statsSock)
	if err := sc.Connect(); err != nil {
		t.Fatalf("stats socket: %v", err)
	}
	list, err := sc.DumpStats("^/if/names$")
	if err != nil || len(list) != 1 {
		t.Fatalf("/if/names: %v %v", list, err)
	}
	if got := fmt.Sprint(list[0].Data); got != "[local0 GigabitEthernet0/8/0 GigabitEthernet0/9/0 loop0]" {
		t.Errorf("/if/names = %s", got)
	}
	_ = sc.Disconnect()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("vpp-sim exited with %v\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("vpp-sim did not stop on SIGTERM\n%s", stderr.String())
	}
	for _, s := range []string{sock, statsSock} {
		if _, err := os.Stat(s); !os.IsNotExist(err) {
			t.Errorf("socket %s left behind: %v", s, err)
		}
	}
	if !strings.Contains(stderr.String(), "started") {
		t.Errorf("no start log:\n%s", stderr.String())
	}
}
