package ksr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/convert"
)

// ElectionPrefix is the etcd prefix of the leader election among contiv-ksr replicas.
const ElectionPrefix = "/contiv-ksr/election"

// DefaultElectionTTL is the lease of the leader: a leader that stops renewing it (crash,
// partition) is replaced after at most this long.
const DefaultElectionTTL = 10 * time.Second

// Backoff of retried resyncs and campaigns.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = time.Second
)

// probeKey is read to check that etcd answers.
const probeKey = "/probe-etcd-connection"

// Deps lists what the plugin needs.
type Deps struct {
	// Log is the plugin's logger.
	Log logrus.FieldLogger
	// KubeConfig is the kubeconfig file; empty means the in-cluster configuration.
	// Ignored when KubeClient is set.
	KubeConfig string
	// KubeClient is the Kubernetes client; nil means one built from KubeConfig.
	KubeClient kubernetes.Interface
	// EtcdConfig loads etcd.conf (EtcdConfig); nil means the defaults. Ignored when
	// EtcdClient is set.
	EtcdConfig infra.ConfigLoader
	// EtcdClient is the etcd connection; nil means one built from EtcdConfig (and
	// closed by Close). A given client is not closed.
	EtcdClient *clientv3.Client
	// Registerer receives the metrics; nil means none are exported.
	Registerer prometheus.Registerer
	// Health receives the plugin's state for the probes; nil means none is reported.
	Health *health.Reporter
	// Identity names this replica in the election; empty means "<host name>/<pid>".
	Identity string
	// ElectionTTL is the leader lease (whole seconds, at least 1); 0 means
	// DefaultElectionTTL.
	ElectionTTL time.Duration
	// ServiceLimits are the node port range and service CIDRs that reflected Services
	// are checked against (convert.ServiceLimits.Sanitize); a zero NodePortMax means
	// the Kubernetes default range, no ServiceCIDRs means cluster IPs are not checked.
	// When ServiceCIDRs are given, the ranges of the cluster's ServiceCIDR objects are
	// valid too.
	ServiceLimits convert.ServiceLimits
	// PodLimits bound what is reflected of a pod (convert.PodLimits.Sanitize): the
	// zero value means convert.DefaultMaxAnnotationBytes per kept annotation.
	PodLimits convert.PodLimits
	// LegacyEndpoints makes the leader write, besides the EndpointSlices, the legacy
	// Endpoints value of every service (k8s/endpoints/...), made of its slices, which
	// agents of the previous release read; false deletes those values. (In the
	// contiv-ksr command the flag -legacy-endpoints, on by default in this release.)
	LegacyEndpoints bool
	// Clock gives the time of the sync markers (ksrsync.SyncMarker.ListedAfter); nil
	// means the real clock.
	Clock clock.PassiveClock
}

// Plugin is contiv-ksr's reflector plugin.
type Plugin struct {
	Deps

	cfg        EtcdConfig
	ownsClient bool
	metrics    *metrics

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// reconnected holds a token when etcd came back after being unreachable.
	reconnected chan struct{}

	mu        sync.Mutex
	connected bool // last probe succeeded
	leader    bool
	synced    bool // leader and the last resync succeeded
	// reportMu serializes report (snapshot and publication together).
	reportMu sync.Mutex
}

// NewPlugin returns the plugin with its dependencies set.
func NewPlugin(deps Deps) *Plugin { return &Plugin{Deps: deps} }

// String names the plugin.
func (p *Plugin) String() string { return "ksr" }

// Init loads etcd.conf and builds the etcd and Kubernetes clients; it does not wait for
// either to answer.
func (p *Plugin) Init() error {
	p.Log = infra.LoggerOr(p.Log, p.String())
	if p.Identity == "" {
		host, _ := os.Hostname()
		p.Identity = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	if p.Clock == nil {
		p.Clock = clock.RealClock{}
	}
	if p.ElectionTTL == 0 {
		p.ElectionTTL = DefaultElectionTTL
	}
	if p.ElectionTTL < time.Second {
		return fmt.Errorf("election TTL %v: must be at least 1s", p.ElectionTTL)
	}
	if p.EtcdClient == nil {
		cfg, err := loadEtcdConfig(p.EtcdConfig)
		if err != nil {
			return err
		}
		p.cfg = cfg
		c, err := newEtcdClient(cfg)
		if err != nil {
			return err
		}
		p.EtcdClient, p.ownsClient = c, true
	} else {
		p.cfg = (&EtcdConfig{}).withDefaults()
	}
	if p.KubeClient == nil {
		c, err := newKubeClient(p.KubeConfig)
		if err != nil {
			p.closeClient()
			return err
		}
		p.KubeClient = c
	}
	p.metrics = newMetrics(Reflectors())
	if p.Registerer != nil {
		if err := p.metrics.register(p.Registerer); err != nil {
			p.closeClient()
			return err
		}
	}
	p.reconnected = make(chan struct{}, 1)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.report()
	return nil
}

// AfterInit starts probing etcd and campaigning for leadership.
func (p *Plugin) AfterInit() error {
	p.wg.Add(2)
	go p.probeLoop()
	go p.campaignLoop()
	p.Log.WithFields(logrus.Fields{"identity": p.Identity, "election": ElectionPrefix}).Info("campaigning for leadership")
	return nil
}

// Close stops reflecting, resigns the leadership (a standby takes over at once) and
// closes the etcd client it created.
func (p *Plugin) Close() error {
	if p.cancel == nil {
		return nil
	}
	p.cancel()
	p.wg.Wait()
	p.cancel = nil
	p.closeClient()
	return nil
}

func (p *Plugin) closeClient() {
	if p.ownsClient && p.EtcdClient != nil {
		p.EtcdClient.Close()
		p.EtcdClient = nil
	}
}

// IsLeader says whether this replica currently leads (and may write).
func (p *Plugin) IsLeader() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leader
}

// InSync says whether this replica leads and its last resync succeeded.
func (p *Plugin) InSync() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.synced
}

// setState updates the state flags (nil: unchanged) and reports the result.
func (p *Plugin) setState(connected, leader, synced *bool) {
	p.mu.Lock()
	if connected != nil {
		p.connected = *connected
	}
	if leader != nil {
		p.leader = *leader
	}
	if synced != nil {
		p.synced = *synced
	}
	p.mu.Unlock()
	p.report()
}

// report turns the state into the health status and the gauges.
func (p *Plugin) report() {
	// Reports are published in the order their snapshots were taken: two goroutines
	// reporting at once must not leave an older state (standby) after a newer one.
	p.reportMu.Lock()
	defer p.reportMu.Unlock()
	p.mu.Lock()
	connected, leader, synced := p.connected, p.leader, p.synced
	p.mu.Unlock()
	// Health first, gauges last: whoever sees the leader gauge sees the health that
	// goes with it.
	if p.Health != nil {
		switch {
		case !connected:
			p.Health.Report(health.Init, "etcd not reachable")
		case leader && !synced:
			p.Health.Report(health.Init, "leader: resync pending")
		case leader:
			p.Health.Report(health.OK, "leader")
		default:
			p.Health.Report(health.OK, "standby")
		}
	}
	p.metrics.leader.Set(boolGauge(leader))
	p.metrics.inSync.Set(boolGauge(synced))
}

// probeLoop checks every reconnect-interval that etcd answers. When it answers again
// after failing, the leader resyncs (etcd may have lost or missed writes meanwhile).
func (p *Plugin) probeLoop() {
	defer p.wg.Done()
	t := time.NewTicker(time.Duration(p.cfg.ReconnectInterval))
	defer t.Stop()
	everConnected, down := false, false
	timeout := min(time.Duration(p.cfg.ReconnectInterval), time.Duration(p.cfg.OperationTimeout))
	for {
		ctx, cancel := context.WithTimeout(p.ctx, timeout)
		_, err := p.EtcdClient.Get(ctx, probeKey)
		cancel()
		if p.ctx.Err() != nil {
			return
		}
		ok := err == nil
		switch {
		case ok && down:
			p.Log.Info("etcd reachable again: resync")
			select {
			case p.reconnected <- struct{}{}:
			default:
			}
			p.setState(&ok, nil, nil)
		case ok && !everConnected:
			p.setState(&ok, nil, nil)
		case !ok && !down:
			p.Log.WithError(err).Warn("etcd not reachable")
			notSynced := false
			p.setState(&ok, nil, &notSynced)
		}
		if ok {
			everConnected = true
		}
		down = !ok
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sleep waits for d or until the plugin closes; false when it closed.
func (p *Plugin) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func nextBackoff(d time.Duration) time.Duration { return min(2*d, maxBackoff) }

// errLostLeadership ends a term whose writes the election guard refused.
var errLostLeadership = errors.New("leadership lost")

// convertPod converts a Pod (only the annotations agents read) and leaves out each
// kept annotation longer than p.PodLimits allow: logged (pod, key, length, bound) and
// counted in contiv_ksr_invalid_fields_total{reflector="pod",field="metadata.annotations"}.
func (p *Plugin) convertPod(pd *corev1.Pod) (*pod.Pod, error) {
	out, err := convert.Pod(pd)
	if err != nil {
		return nil, err
	}
	p.reportProblems(pod.Keyword, pd.Namespace+"/"+pd.Name, p.PodLimits.Sanitize(out))
	return out, nil
}

// reportProblems logs and counts the fields of an object that broke a limit and were left out.
func (p *Plugin) reportProblems(reflector, object string, problems []convert.FieldProblem) {
	for _, prob := range problems {
		p.metrics.invalidFields.WithLabelValues(reflector, prob.FieldName()).Inc()
		p.Log.WithFields(logrus.Fields{
			reflector: object, "field": prob.Field, "value": prob.Value,
		}).Warn("invalid " + reflector + " field: " + prob.Error())
	}
}

// convertService converts a Service and leaves out what breaks p.ServiceLimits (the
// service CIDRs extended by cidrs, the ranges of the ServiceCIDR objects): each such
// field is logged (object, field, value, what was done) and counted in
// contiv_ksr_invalid_fields_total{reflector="service",field}.
func (p *Plugin) convertService(s *corev1.Service, cidrs []*net.IPNet) (*service.Service, error) {
	out, err := convert.Service(s)
	if err != nil {
		return nil, err
	}
	limits := p.ServiceLimits
	if limits.NodePortMax == 0 {
		limits.NodePortMin, limits.NodePortMax = convert.DefaultNodePortMin, convert.DefaultNodePortMax
	}
	if len(limits.ServiceCIDRs) > 0 && len(cidrs) > 0 {
		limits.ServiceCIDRs = append(slices.Clip(limits.ServiceCIDRs), cidrs...)
	}
	p.reportProblems(service.Keyword, s.Namespace+"/"+s.Name, limits.Sanitize(out))
	return out, nil
}
