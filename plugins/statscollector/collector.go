package statscollector

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/sirupsen/logrus"
	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/adapter/statsclient"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer/acl"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/aclplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
)

// DefaultScrapeTimeout bounds one scrape's read of the stats segment.
const DefaultScrapeTimeout = time.Second

// vxlanPrefix starts the logical names of the VXLAN tunnels ipnet creates:
// vxlan<node ID> (plugins/ipnet/node.go vxlanIfName).
const vxlanPrefix = "vxlan"

// The entries read from the segment at every scrape: the /if/ vectors (not the
// /interfaces/ symlinks: govpp's UpdateDir does not refresh symlinks, and a fresh read
// of the vectors costs one copy per counter), every /err/ symlink (the name is the
// only place that says which error index is which), the ACL rule counters and NAT's
// session gauges.
var patterns = []string{`^/if/(rx|tx|drops)$|^/err/|^/acl/[0-9]+/matches$|^/nat44-ed/(total-sessions|max-cfg-sessions)$`}

// PodByIf tells which pod a VPP interface wires (ipnet's API; safe from any goroutine).
type PodByIf interface {
	GetPodByIf(ifName string) (podNamespace, podName string, exists bool)
}

// Nodes lists the cluster's nodes (nodesync's API; safe from any goroutine).
type Nodes interface {
	GetAllNodes() map[string]*nodesync.Node
}

// RuleOwner is what the collector labels a policy rule counter with: the
// NetworkPolicy ("namespace/name"; several joined with ",", e.g. the policies
// isolating the pods of a final deny) and whether the rule denies. It is the
// policy renderer's type; a rule whose Policy is "" is the renderer's own (no
// policy made it) and is not exported.
type RuleOwner = acl.RuleOwner

// PolicyRules maps the rules of the agent's ACLs to NetworkPolicies. It is the hook
// the policy renderer must provide (see the package documentation); it must be safe
// for concurrent use and cheap (it is asked once per ACL per scrape).
type PolicyRules interface {
	// ACLRules returns the owner of every rule of the named ACL, by rule index; nil
	// for an ACL that is not a NetworkPolicy's.
	ACLRules(aclName string) []RuleOwner
}

// Deps lists what the collector needs.
type Deps struct {
	// Log is the plugin's logger; nil means infra.LoggerOr's default.
	Log logrus.FieldLogger
	// Stats reads VPP's stats segment; nil means govpp's statsclient on
	// StatsSocketPath, connected at the first scrape and again after a loss.
	Stats adapter.StatsAPI
	// StatsSocketPath is VPP's stats socket (govpp.conf stats-socket-path); "" means
	// govpp's default, /run/vpp/stats.sock.
	StatsSocketPath string
	// Interfaces is the VPP interface descriptor's metadata map (logical name ->
	// *ifaceidx.Metadata, scheduler.GetMetadataMap(ifaceidx.DescriptorName)): it gives
	// each interface the agent configured its sw_if_index. Required.
	Interfaces kvapi.MetadataMap
	// Pods maps interfaces to pods (ipnet). Required.
	Pods PodByIf
	// Nodes names the remote node of a VXLAN tunnel; nil: no VXLAN metrics.
	Nodes Nodes
	// ACLs is the ACL descriptor's metadata map (name -> *aclplugin.ACLMetadata); nil:
	// no policy metrics.
	ACLs kvapi.MetadataMap
	// PolicyRules maps ACL rules to NetworkPolicies; nil: no policy metrics.
	PolicyRules PolicyRules
	// Registerer is where the collector is registered at Init (nil: nowhere; the
	// caller may register the plugin itself, it is a prometheus.Collector).
	Registerer prometheus.Registerer
	// ScrapeTimeout bounds one scrape's read of the segment (connection included);
	// 0 means DefaultScrapeTimeout.
	ScrapeTimeout time.Duration
	// Now is the clock of the scrape deadline; nil means time.Now.
	Now func() time.Time
}

// Plugin exports VPP's data-plane counters as Prometheus metrics, read at every scrape.
type Plugin struct {
	Deps

	log   logrus.FieldLogger
	descs *descs

	mu        sync.Mutex // one scrape at a time; guards what follows
	client    *statsclient.StatsClient
	connected bool
	nodeNames map[uint32]string // node ID -> name, refreshed when a tunnel's ID is unknown
	lastErr   string
	// dirEpoch and dirIndexes are the directory epoch of the last full listing and
	// the indexes of the entries of patterns at that epoch: while VPP's directory
	// stays at that epoch a scrape reads those indexes, without matching the names of
	// the whole directory again.
	dirEpoch   int64
	dirIndexes []uint32
	dirNames   [][]byte // the names at dirIndexes (copies)

	podLabels  *labelSets[[2]string] // namespace, pod
	nodeLabels *labelSets[string]    // remote node
	errLabels  *labelSets[string]    // /err/ entry name
	ruleLabels *labelSets[ruleKey]
}

// ruleKey identifies the series of a policy rule.
type ruleKey struct {
	acl    string
	rule   int
	policy string
	deny   bool
}

var _ prometheus.Collector = (*Plugin)(nil)

// NewPlugin returns the plugin with its dependencies set.
func NewPlugin(deps Deps) *Plugin { return &Plugin{Deps: deps} }

// String names the plugin.
func (p *Plugin) String() string { return "statscollector" }

// Init checks the dependencies and registers the collector. It does not connect:
// VPP may start after the agent, and every scrape connects when needed.
func (p *Plugin) Init() error {
	p.log = infra.LoggerOr(p.Log, p.String())
	var missing []error
	if p.Interfaces == nil {
		missing = append(missing, errors.New("Deps.Interfaces is required"))
	}
	if p.Pods == nil {
		missing = append(missing, errors.New("Deps.Pods is required"))
	}
	if p.ScrapeTimeout < 0 {
		missing = append(missing, fmt.Errorf("Deps.ScrapeTimeout: must not be negative, got %v", p.ScrapeTimeout))
	}
	if len(missing) > 0 {
		return fmt.Errorf("statscollector: %w", errors.Join(missing...))
	}
	if p.ScrapeTimeout == 0 {
		p.ScrapeTimeout = DefaultScrapeTimeout
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	p.descs = newDescs()
	p.nodeNames = make(map[uint32]string)
	p.podLabels, p.nodeLabels = newLabelSets[[2]string](), newLabelSets[string]()
	p.errLabels, p.ruleLabels = newLabelSets[string](), newLabelSets[ruleKey]()
	if p.Stats == nil {
		p.client = statsclient.NewStatsClient(p.StatsSocketPath, statsclient.SetSocketRetryTimeout(p.ScrapeTimeout))
		p.Stats = p.client
	} else {
		p.connected = true // the caller connected it
	}
	if p.Registerer != nil {
		if err := health.RegisterAll(p.Registerer, p); err != nil {
			return fmt.Errorf("statscollector: register metrics: %w", err)
		}
	}
	return nil
}

// Close unregisters the collector and disconnects its own stats client.
func (p *Plugin) Close() error {
	if p.Registerer != nil && p.descs != nil {
		health.UnregisterAll(p.Registerer, p)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client != nil && p.connected {
		p.connected = false
		return p.client.Disconnect()
	}
	return nil
}

// Describe implements prometheus.Collector.
func (p *Plugin) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range p.descs.all() {
		ch <- d
	}
}

// Collect implements prometheus.Collector: it reads the segment once (bounded by
// ScrapeTimeout) and exports what it read for the interfaces, ACLs and nodes the
// agent knows now.
func (p *Plugin) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	defer p.mu.Unlock()
	start := p.Now()
	entries, err := p.read(start.Add(p.ScrapeTimeout))
	if err != nil {
		if msg := err.Error(); msg != p.lastErr { // one line per new problem, not per scrape
			p.log.WithError(err).Warn("cannot read VPP's stats segment; data-plane metrics are not exported")
			p.lastErr = msg
		}
		ch <- prometheus.MustNewConstMetric(p.descs.up, prometheus.GaugeValue, 0)
		return
	}
	if p.lastErr != "" {
		p.log.Info("VPP's stats segment is readable again")
		p.lastErr = ""
	}
	p.export(ch, index(entries))
	ch <- prometheus.MustNewConstMetric(p.descs.up, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(p.descs.scrapeSeconds, prometheus.GaugeValue, p.Now().Sub(start).Seconds())
}

// read returns a consistent copy of the entries of patterns, connecting first when
// needed; a busy or changing segment is read again until the deadline.
func (p *Plugin) read(deadline time.Time) ([]adapter.StatEntry, error) {
	for attempt := 1; ; attempt++ {
		if !p.connected {
			if err := p.connect(); err != nil {
				return nil, err
			}
		}
		list, err := p.readOnce()
		switch {
		case err == nil:
			detachNames(list)
			return list, nil
		case errors.Is(err, adapter.ErrStatsDisconnected):
			if p.client == nil {
				return nil, fmt.Errorf("read stats: %w", err)
			}
			p.connected = false // VPP went away; connect again (within the deadline)
		case errors.Is(err, adapter.ErrStatsDataBusy), errors.Is(err, adapter.ErrStatsDirStale),
			errors.Is(err, adapter.ErrStatsAccessFailed):
			// VPP changed its directory during the read: read again
		default:
			return nil, fmt.Errorf("read stats: %w", err)
		}
		if !p.Now().Before(deadline) {
			return nil, fmt.Errorf("read stats: no consistent read in %v (%d attempts): %w", p.ScrapeTimeout, attempt, err)
		}
	}
}

// readOnce reads the entries of patterns: by their indexes when the directory has
// not changed since they were listed, else by listing them again.
func (p *Plugin) readOnce() ([]adapter.StatEntry, error) {
	if p.dirIndexes != nil {
		dir, err := p.Stats.PrepareDirOnIndex(p.dirIndexes...)
		switch {
		case err == nil && dir.Epoch == p.dirEpoch && p.sameNames(dir.Entries):
			return dir.Entries, nil
		case errors.Is(err, adapter.ErrStatsDisconnected), errors.Is(err, adapter.ErrStatsDataBusy),
			errors.Is(err, adapter.ErrStatsAccessFailed):
			return nil, err
		}
		// Another epoch, or another directory behind the same epoch (govpp's client
		// reconnected to a restarted VPP by itself; an index past the end fails):
		// list again.
	}
	dir, err := p.Stats.PrepareDir(patterns...)
	if err != nil {
		return nil, err
	}
	p.dirEpoch = dir.Epoch
	p.dirIndexes = make([]uint32, len(dir.Entries))
	p.dirNames = make([][]byte, len(dir.Entries))
	for i, e := range dir.Entries {
		p.dirIndexes[i] = e.Index
		p.dirNames[i] = bytes.Clone(e.Name)
	}
	return dir.Entries, nil
}

// detachNames copies the entries' names out of the mapped segment (govpp hands out
// slices of it), into one buffer: govpp's socket watcher may unmap the segment on a
// VPP restart while the scrape still reads them.
func detachNames(list []adapter.StatEntry) {
	n := 0
	for i := range list {
		n += len(list[i].Name)
	}
	buf := make([]byte, 0, n)
	for i := range list {
		start := len(buf)
		buf = append(buf, list[i].Name...)
		list[i].Name = buf[start:len(buf):len(buf)]
	}
}

// sameNames tells whether entries are the ones listed at dirIndexes (govpp stops at
// an empty slot, so a freed entry shortens the list).
func (p *Plugin) sameNames(entries []adapter.StatEntry) bool {
	if len(entries) != len(p.dirNames) {
		return false
	}
	for i := range entries {
		if !bytes.Equal(entries[i].Name, p.dirNames[i]) {
			return false
		}
	}
	return true
}

// connect (re)connects the plugin's own statsclient. A client that lost VPP is
// disconnected first, which also stops its socket watcher.
func (p *Plugin) connect() error {
	if err := p.client.Disconnect(); err != nil {
		p.log.WithError(err).Debug("disconnect the stats client")
	}
	path := p.StatsSocketPath
	if path == "" {
		path = statsclient.DefaultSocketName
	}
	// A socket that does not exist fails the scrape at once: govpp's client would
	// wait for it until ScrapeTimeout at every scrape (a VPP without a stats socket,
	// or one restarting, would slow every GET /metrics by the bound).
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("VPP's stats socket: %w", err)
	}
	if err := p.client.Connect(); err != nil {
		return fmt.Errorf("connect to VPP's stats socket %s: %w", path, err)
	}
	p.connected = true
	p.dirIndexes = nil // another VPP, another directory
	return nil
}

// entries is one scrape's read: the /if/, ACL and NAT entries by name; the /err/
// entries, by far the most, are only walked in the list.
type entries struct {
	byName map[string]adapter.Stat
	list   []adapter.StatEntry
}

func index(list []adapter.StatEntry) entries {
	e := entries{byName: make(map[string]adapter.Stat, 32), list: list}
	for i := range list {
		if !bytes.HasPrefix(list[i].Name, errPrefix) {
			e.byName[string(list[i].Name)] = list[i].Data
		}
	}
	return e
}

var errPrefix = []byte("/err/")

// simple returns element k of simple counter name, summed over threads.
func (e entries) simple(name string, k uint32) uint64 {
	s, _ := e.byName[name].(adapter.SimpleCounterStat)
	return sumSimple(s, k)
}

func sumSimple(s adapter.SimpleCounterStat, k uint32) uint64 {
	var sum uint64
	for _, t := range s {
		if int(k) < len(t) {
			sum += uint64(t[k])
		}
	}
	return sum
}

// combined returns element k of combined counter name, summed over threads.
func (e entries) combined(name string, k uint32) (packets, bytes uint64) {
	s, _ := e.byName[name].(adapter.CombinedCounterStat)
	for _, t := range s {
		if int(k) < len(t) {
			packets += t[k].Packets()
			bytes += t[k].Bytes()
		}
	}
	return packets, bytes
}

// export sends the metrics of one read.
func (p *Plugin) export(ch chan<- prometheus.Metric, e entries) {
	p.podLabels.scrape()
	p.nodeLabels.scrape()
	p.errLabels.scrape()
	p.ruleLabels.scrape()
	p.exportInterfaces(ch, e)
	p.exportErrors(ch, e)
	p.exportPolicies(ch, e)
	ch <- prometheus.MustNewConstMetric(p.descs.natSessions, prometheus.GaugeValue, float64(e.simple("/nat44-ed/total-sessions", 0)))
	if v, ok := e.byName["/nat44-ed/max-cfg-sessions"].(adapter.ScalarStat); ok {
		ch <- prometheus.MustNewConstMetric(p.descs.natMax, prometheus.GaugeValue, float64(v))
	}
}

// exportInterfaces exports the counters of the pods' and the tunnels' interfaces: the
// interfaces the agent configured now, so a deleted pod's series are gone.
func (p *Plugin) exportInterfaces(ch chan<- prometheus.Metric, e entries) {
	idx := ifaceidx.New(p.Interfaces)
	refreshed := false
	for _, name := range p.Interfaces.ListAllNames() {
		md, ok := idx.LookupByName(name)
		if !ok {
			continue
		}
		if ns, pod, ok := p.Pods.GetPodByIf(name); ok {
			labels := p.podLabels.get([2]string{ns, pod}, func() []*dto.LabelPair {
				return labelPairs(labelNamespace, ns, labelPod, pod)
			})
			ifaceCounters(ch, p.descs.pod, e, md.SwIfIndex, labels)
			continue
		}
		id, ok := tunnelNodeID(name)
		if !ok || p.Nodes == nil {
			continue
		}
		node, known := p.nodeNames[id]
		if !known && !refreshed {
			p.refreshNodeNames()
			refreshed = true
			node, known = p.nodeNames[id]
		}
		if known {
			labels := p.nodeLabels.get(node, func() []*dto.LabelPair { return labelPairs(labelRemoteNode, node) })
			ifaceCounters(ch, p.descs.vxlan, e, md.SwIfIndex, labels)
		}
	}
}

// tunnelNodeID parses vxlan<ID>.
func tunnelNodeID(ifName string) (uint32, bool) {
	rest, ok := strings.CutPrefix(ifName, vxlanPrefix)
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseUint(rest, 10, 32)
	return uint32(id), err == nil
}

// refreshNodeNames re-reads node IDs (a tunnel to a node not seen before).
func (p *Plugin) refreshNodeNames() {
	clear(p.nodeNames)
	for name, n := range p.Nodes.GetAllNodes() {
		p.nodeNames[n.ID] = name
	}
}

func ifaceCounters(ch chan<- prometheus.Metric, d ifaceDescs, e entries, sw uint32, labels []*dto.LabelPair) {
	counter := func(desc *prometheus.Desc, v uint64) {
		ch <- &sample{desc: desc, labels: labels, value: float64(v)}
	}
	rxP, rxB := e.combined("/if/rx", sw)
	txP, txB := e.combined("/if/tx", sw)
	counter(d.rxPackets, rxP)
	counter(d.rxBytes, rxB)
	counter(d.txPackets, txP)
	counter(d.txBytes, txB)
	counter(d.drops, e.simple("/if/drops", sw))
}

// exportErrors exports the error counters that are not zero, by node and reason.
func (p *Plugin) exportErrors(ch chan<- prometheus.Metric, e entries) {
	for i := range e.list {
		entry := &e.list[i]
		if !bytes.HasPrefix(entry.Name, errPrefix) {
			continue
		}
		s, _ := entry.Data.(adapter.SimpleCounterStat)
		v := sumSimple(s, 0) // a symlink reads as one element per thread
		if v == 0 {
			continue
		}
		node, reason, ok := bytes.Cut(entry.Name[len(errPrefix):], []byte("/"))
		if !ok {
			continue
		}
		labels := p.errLabels.get(string(entry.Name), func() []*dto.LabelPair {
			return labelPairs(labelReason, string(reason), labelVPPNode, string(node))
		})
		ch <- &sample{desc: p.descs.errors, labels: labels, value: float64(v)}
	}
}

// exportPolicies exports the rule counters of the ACLs that PolicyRules knows, for
// the rules that matched.
func (p *Plugin) exportPolicies(ch chan<- prometheus.Metric, e entries) {
	if p.ACLs == nil || p.PolicyRules == nil {
		return
	}
	for _, name := range p.ACLs.ListAllNames() {
		v, ok := p.ACLs.GetValue(name)
		md, isACL := v.(*aclplugin.ACLMetadata)
		if !ok || !isACL || md == nil {
			continue
		}
		owners := p.PolicyRules.ACLRules(name)
		if owners == nil {
			continue
		}
		counters := "/acl/" + strconv.FormatUint(uint64(md.Index), 10) + "/matches"
		for r, o := range owners {
			if o.Policy == "" {
				continue // the renderer's own rule, no policy's
			}
			packets, bytes := e.combined(counters, uint32(r))
			if packets == 0 {
				continue
			}
			labels := p.ruleLabels.get(ruleKey{acl: name, rule: r, policy: o.Policy, deny: o.Deny}, func() []*dto.LabelPair {
				verdict := verdictPermit
				if o.Deny {
					verdict = verdictDeny
				}
				return labelPairs(labelACL, name, labelPolicy, o.Policy, labelRule, strconv.Itoa(r), labelVerdict, verdict)
			})
			ch <- &sample{desc: p.descs.rulePackets, labels: labels, value: float64(packets)}
			ch <- &sample{desc: p.descs.ruleBytes, labels: labels, value: float64(bytes)}
		}
	}
}
