package k8s

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
)

// With stn.enabled, contiv-stn runs in its own host-network DaemonSet (it outlives the
// vswitch pod), privileged, reading the agent's contiv.conf for its node; its record of
// the stolen NIC is at contiv.conf's stnRecordFile, on a host directory that the agent
// mounts at the same path. Without stn.enabled there is no contiv-stn, and a contiv.conf
// that steals a NIC is refused at rendering.
func TestSTNOptionRunsContivSTNBesideTheVswitchSharingTheRecord(t *testing.T) {
	docs, err := renderChart(chartDir, map[string]any{
		"stn":    map[string]any{"enabled": true},
		"config": map[string]any{"contiv": map[string]any{"stealInterface": "eth0"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := decodeManifest(string(formatManifest(docs)))
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range m.check() {
		t.Error(problem)
	}
	checkConfigMapFilesLoad(t, m)
	conf := mustLoad[*contivconf.Config](t, m, "contiv-agent-cfg/contiv.conf")

	ds, ok := m.daemonSets["contiv-stn"]
	if !ok {
		t.Fatal("stn.enabled: no DaemonSet contiv-stn")
	}
	pod := &ds.Spec.Template
	stn := container(pod, "contiv-stn")
	if !pod.Spec.HostNetwork || stn.SecurityContext == nil || stn.SecurityContext.Privileged == nil || !*stn.SecurityContext.Privileged {
		t.Errorf("contiv-stn: hostNetwork %v, securityContext %+v; want the host's network, privileged", pod.Spec.HostNetwork, stn.SecurityContext)
	}
	cmd := strings.Join(stn.Command, " ")
	if !strings.HasPrefix(cmd, "/usr/bin/contiv-stn -contiv-config /etc/contiv/contiv.conf -node-name $(NODE_NAME)") {
		t.Errorf("contiv-stn command %q", cmd)
	}
	if mnt, _ := mountFor(stn, "/etc/contiv/contiv.conf"); mnt == nil || volume(pod, mnt.Name).ConfigMap == nil || volume(pod, mnt.Name).ConfigMap.Name != "contiv-agent-cfg" {
		t.Error("contiv-stn does not read the agent's contiv.conf (ConfigMap contiv-agent-cfg)")
	}
	if mnt, _ := mountFor(stn, "/run/vpp/api.sock"); mnt == nil || volume(pod, mnt.Name).HostPath == nil || volume(pod, mnt.Name).HostPath.Path != "/run/vpp" {
		t.Error("contiv-stn does not see VPP's API socket of the host's /run/vpp")
	}

	vswitch := &m.daemonSets["contiv-vswitch"].Spec.Template
	agent := container(vswitch, "contiv-vswitch")
	var hostDirs []string
	for _, w := range []struct {
		pod *corev1.PodTemplateSpec
		c   *corev1.Container
	}{{pod, stn}, {vswitch, agent}} {
		mnt, rel := mountFor(w.c, conf.STNRecordFile)
		if mnt == nil || volume(w.pod, mnt.Name).HostPath == nil {
			t.Errorf("container %s: stnRecordFile %s is on no host directory", w.c.Name, conf.STNRecordFile)
			continue
		}
		hostDirs = append(hostDirs, volume(w.pod, mnt.Name).HostPath.Path+"/"+rel)
	}
	if len(hostDirs) == 2 && hostDirs[0] != hostDirs[1] {
		t.Errorf("the record is %s for contiv-stn, %s for the agent", hostDirs[0], hostDirs[1])
	}

	plain, err := renderChart(chartDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(plain, func(d renderedDoc) bool { return d.Name == "contiv-stn" }) {
		t.Error("contiv-stn rendered without stn.enabled")
	}
	_, err = renderChart(chartDir, map[string]any{"config": map[string]any{"contiv": map[string]any{"stealFirstNIC": true}}})
	if err == nil || !strings.Contains(err.Error(), "config.contiv.stealInterface or stealFirstNIC needs stn.enabled") {
		t.Errorf("stealFirstNIC without stn.enabled: %v", err)
	}
}
