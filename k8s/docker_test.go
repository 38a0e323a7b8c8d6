package k8s

import (
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
)

const dockerDir = "../docker"

// vppSections parses a VPP startup configuration into its top-level sections, each with
// the words inside its braces (nested braces kept as words).
func vppSections(text string) (map[string][]string, error) {
	var words []string
	for _, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		line = strings.NewReplacer("{", " { ", "}", " } ").Replace(line)
		words = append(words, strings.Fields(line)...)
	}
	sections := map[string][]string{}
	for i := 0; i < len(words); {
		name := words[i]
		if i+1 >= len(words) || words[i+1] != "{" {
			return nil, fmt.Errorf("section %q: want {", name)
		}
		depth, end := 0, -1
		for j := i + 1; j < len(words) && end < 0; j++ {
			switch words[j] {
			case "{":
				depth++
			case "}":
				depth--
				if depth == 0 {
					end = j
				}
			}
		}
		if end < 0 {
			return nil, fmt.Errorf("section %q: unbalanced braces", name)
		}
		if _, dup := sections[name]; dup {
			return nil, fmt.Errorf("section %q twice", name)
		}
		sections[name] = words[i+2 : end]
		i = end + 1
	}
	return sections, nil
}

// wordAfter returns the word following key in a section.
func wordAfter(words []string, key string) string {
	if i := slices.Index(words, key); i >= 0 && i+1 < len(words) {
		return words[i+1]
	}
	return ""
}

func TestVPPStartupConfigFitsVPP2510AndTheAgent(t *testing.T) {
	data, err := os.ReadFile(path.Join(dockerDir, "vswitch", "contiv-vswitch.conf"))
	if err != nil {
		t.Fatal(err)
	}
	sections, err := vppSections(string(data))
	if err != nil {
		t.Fatal(err)
	}
	// Sections VPP 25.10 knows (an unknown one stops VPP at start): in particular not
	// upstream's `nat { endpoint-dependent ... }`, gone with the NAT44 plugin split.
	known := []string{"unix", "socksvr", "statseg", "api-trace", "api-segment", "cpu", "buffers",
		"dpdk", "plugins", "logging", "memory", "punt", "ip", "ip6", "session", "tcp", "acl-plugin"}
	for name := range sections {
		if !slices.Contains(known, name) {
			t.Errorf("section %q: not a VPP 25.10 startup section", name)
		}
	}
	unix := sections["unix"]
	// contiv-init supervises VPP: it must not fork into the background.
	if !slices.Contains(unix, "nodaemon") {
		t.Error("unix: nodaemon missing")
	}
	if cli := wordAfter(unix, "cli-listen"); path.Dir(cli) != "/run/vpp" {
		t.Errorf("unix: cli-listen %q, want a socket in /run/vpp (shared with the host)", cli)
	}
	// The binary API socket is where govpp.conf and contiv-init look for it.
	socket := ""
	switch sock := sections["socksvr"]; {
	case slices.Contains(sock, "default"):
		socket = "/run/vpp/api.sock"
	default:
		socket = wordAfter(sock, "socket-name")
	}
	govpp := mustLoad[*govppmux.Config](t, readManifest(t), "vpp-agent-cfg/govpp.conf")
	if socket != govpp.BinAPISocketPath || socket != govppmux.DefaultSocketPath {
		t.Errorf("socksvr serves %q; govpp.conf binapi-socket-path %q, default %q", socket,
			govpp.BinAPISocketPath, govppmux.DefaultSocketPath)
	}
	if _, ok := sections["statseg"]; !ok {
		t.Error("statseg section missing")
	}
}

// finalStageCopies returns the paths a Dockerfile's last stage installs with COPY.
func finalStageCopies(dockerfile string) []string {
	stage := dockerfile
	if i := strings.LastIndex(dockerfile, "\nFROM "); i >= 0 {
		stage = dockerfile[i:]
	}
	var paths []string
	for _, line := range strings.Split(stage, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "COPY" {
			continue
		}
		var srcs []string
		for _, w := range f[1 : len(f)-1] {
			if !strings.HasPrefix(w, "--") {
				srcs = append(srcs, w)
			}
		}
		dst := f[len(f)-1]
		if !strings.HasSuffix(dst, "/") {
			paths = append(paths, dst)
			continue
		}
		for _, s := range srcs {
			paths = append(paths, dst+path.Base(s))
		}
	}
	return paths
}

// TestImagesProvideWhatTheManifestsRun checks the contivvpp images against the
// containers that run them: the commands and the files their scripts take from the image
// are installed by the image's Dockerfile, and its COPY sources exist.
func TestImagesProvideWhatTheManifestsRun(t *testing.T) {
	m := readManifest(t)
	needs := map[string][]string{}
	for _, w := range m.workloads() {
		containers := append(append([]corev1.Container{}, w.pod.Spec.InitContainers...), w.pod.Spec.Containers...)
		for _, c := range containers {
			repo, _, _ := strings.Cut(c.Image, ":")
			image, ok := strings.CutPrefix(repo, "contivvpp/")
			if !ok {
				continue
			}
			if len(c.Command) > 0 && c.Command[0] != "/bin/sh" {
				needs[image] = append(needs[image], c.Command[0])
			}
			if len(c.Command) == 1 && c.Command[0] == "/usr/bin/contiv-init" {
				// contiv-init starts the agent from its default -agent-bin.
				needs[image] = append(needs[image], "/usr/bin/contiv-agent")
			}
			script, _ := shellScript(&c)
			if strings.Contains(script, "/usr/share/contiv/contiv-vswitch.conf") {
				needs[image] = append(needs[image], "/usr/share/contiv/contiv-vswitch.conf")
			}
			if strings.Contains(script, "/opt/contiv-cni/bin/") {
				needs[image] = append(needs[image], "/opt/contiv-cni/bin/contiv-cni",
					"/opt/contiv-cni/bin/loopback", "/opt/contiv-cni/bin/portmap")
			}
		}
	}
	for _, image := range []string{"vswitch", "cni", "ksr"} {
		if _, ok := needs[image]; !ok {
			t.Errorf("no container runs contivvpp/%s", image)
		}
	}
	for image, paths := range needs {
		data, err := os.ReadFile(path.Join(dockerDir, image, "Dockerfile"))
		if err != nil {
			t.Errorf("contivvpp/%s: %v", image, err)
			continue
		}
		installed := finalStageCopies(string(data))
		for _, p := range paths {
			if !slices.Contains(installed, p) {
				t.Errorf("contivvpp/%s: %s is used by the manifests, the Dockerfile installs only %v", image, p, installed)
			}
		}
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) < 3 || f[0] != "COPY" || strings.HasPrefix(f[1], "--from=") {
				continue
			}
			for _, src := range f[1 : len(f)-1] {
				if src == "." || strings.HasPrefix(src, "--") {
					continue
				}
				if _, err := os.Stat(path.Join("..", src)); err != nil {
					t.Errorf("contivvpp/%s: COPY source %s: %v", image, src, err)
				}
			}
		}
	}
}
