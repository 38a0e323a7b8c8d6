package podmanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
)

// DefaultCNICacheDir is where libcni-based container runtimes (containerd, CRI-O,
// cnitool) keep the result of every CNI ADD until the DEL.
const DefaultCNICacheDir = "/var/lib/cni/results"

// Bounds of the CNI cache scan: a cache entry is a few kilobytes.
const (
	maxCacheEntrySize = 1 << 20
	maxCacheEntries   = 10000
)

// cniCacheEntry is the part of a libcni cache entry ("cniCacheV1") the recovery reads.
type cniCacheEntry struct {
	Kind        string      `json:"kind"`
	ContainerID string      `json:"containerId"`
	Config      []byte      `json:"config"`
	IfName      string      `json:"ifName"`
	NetNS       string      `json:"netns"`
	CNIArgs     [][2]string `json:"cniArgs"`
	Result      struct {
		Interfaces []struct {
			Name    string `json:"name"`
			Sandbox string `json:"sandbox"`
		} `json:"interfaces"`
		IPs []struct {
			Address   string `json:"address"`
			Interface *int   `json:"interface"`
		} `json:"ips"`
	} `json:"result"`
}

// cachedPods reads the runtime's CNI cache in dir and returns the pods that contiv-cni
// added through this agent (the cached configuration names socketPath as grpcServer),
// as records with their container, netns and IP. Unreadable or foreign entries are
// skipped and counted in skipped; a missing directory is no pods.
func cachedPods(dir, socketPath string) (pods []podRecord, skipped int, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("CNI cache %s: %w", dir, err)
	}
	if len(entries) > maxCacheEntries {
		entries = entries[:maxCacheEntries]
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		r, ok := readCacheEntry(filepath.Join(dir, e.Name()), socketPath)
		switch {
		case r != nil:
			pods = append(pods, *r)
		case !ok:
			skipped++
		}
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].id().String() < pods[j].id().String() })
	return pods, skipped, nil
}

// readCacheEntry returns the record of one cache entry; nil with ok true for an entry
// of another network or agent, nil with ok false for an unusable one.
func readCacheEntry(path, socketPath string) (rec *podRecord, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCacheEntrySize+1))
	if err != nil || len(data) > maxCacheEntrySize {
		return nil, false
	}
	return parseCacheEntry(data, socketPath)
}

// parseCacheEntry is readCacheEntry on the content of an entry.
func parseCacheEntry(data []byte, socketPath string) (rec *podRecord, ok bool) {
	var e cniCacheEntry
	if json.Unmarshal(data, &e) != nil || e.Kind != "cniCacheV1" {
		return nil, false
	}
	if !contivConfigFor(e.Config, socketPath) {
		return nil, true
	}
	var id podmodel.ID
	for _, a := range e.CNIArgs {
		switch a[0] {
		case PodNameArg:
			id.Name = a[1]
		case PodNamespaceArg:
			id.Namespace = a[1]
		}
	}
	netns := e.NetNS
	ifIndex := -1
	for i, iface := range e.Result.Interfaces {
		if iface.Name == e.IfName && iface.Sandbox != "" {
			ifIndex = i
			if netns == "" {
				netns = iface.Sandbox
			}
		}
	}
	if id.Validate() != nil || e.ContainerID == "" || netns == "" {
		return nil, false
	}
	r := &podRecord{Name: id.Name, Namespace: id.Namespace, ContainerID: e.ContainerID, NetworkNamespace: netns}
	if ValidateIfName(e.IfName) == nil {
		r.IfName = e.IfName
	}
	var ips []net.IP // every family, in the result's order (the primary first)
	for _, ip := range e.Result.IPs {
		if ip.Interface != nil && *ip.Interface != ifIndex {
			continue
		}
		if addr, _, err := net.ParseCIDR(ip.Address); err == nil {
			ips = append(ips, addr)
		}
	}
	r.setIPs(ips)
	return r, true
}

// contivConfigFor reports whether a cached network configuration (a single plugin or a
// conflist) runs contiv-cni with grpcServer socketPath.
func contivConfigFor(config []byte, socketPath string) bool {
	type plugin struct {
		Type       string `json:"type"`
		GRPCServer string `json:"grpcServer"`
	}
	var conf struct {
		plugin
		Plugins []plugin `json:"plugins"`
	}
	if json.Unmarshal(config, &conf) != nil {
		return false
	}
	for _, p := range append(conf.Plugins, conf.plugin) {
		if p.Type == "contiv-cni" && strings.TrimSpace(p.GRPCServer) == socketPath {
			return true
		}
	}
	return false
}
