package ipam

import (
	"fmt"
	"math"
	"net"
	"sort"
)

// owner is who holds an address: the main interface of a pod (ifName "") or one of the
// pod's custom interfaces.
type owner struct {
	pod    PodID
	ifName string
}

// String names the owner for messages.
func (o owner) String() string {
	if o.ifName == "" {
		return "pod " + o.pod.String()
	}
	return fmt.Sprintf("interface %s of pod %s", o.ifName, o.pod)
}

// podHosts are the host numbers held by one pod.
type podHosts struct {
	main    uint64
	hasMain bool
	// tentative marks a main address taken from the Kubernetes state for a pod that
	// has no CNI ADD on this node (see Plugin): the pod's changes in that state decide
	// about it, a CNI ADD of the pod confirms it.
	tentative bool
	custom    map[string]uint64
}

// maxReleasedHints bounds the released hints of a pool (see podPool.released): past it,
// an arbitrary hint is forgotten. A hint only spares a tentative claim, so losing one
// costs at most an address held until the pod's next change in the Kubernetes state or
// the next resync.
const maxReleasedHints = 1024

// maxAllocHost bounds the host numbers that allocate hands out, so that the arithmetic
// never overflows for IPv6 subnets with 64 or more host bits: such a subnet gives its
// pods addresses from its first 2^62 addresses, which no node can exhaust.
const maxAllocHost = uint64(1) << 62

// podPool is the pod address allocator of one node's pod subnet. It is pure state: no
// I/O, no locking (the plugin locks). Host numbers count from the network address:
//
//	0             network address            never allocated
//	1             pod gateway                never allocated
//	2 .. last-2   pod addresses              allocated round robin
//	last-1        NAT loopback               never allocated
//	last          broadcast (IPv6: last)     never allocated
//
// allocate continues after the host number it assigned last and wraps around to 2, so
// a released address is reused as late as possible. Free addresses are found through a
// sparse bitmap of the used host numbers: an allocation costs O(1 + used/64) map
// lookups, independent of the subnet size.
type podPool struct {
	subnet   *net.IPNet // canonical form
	lo, hi   uint64     // host numbers allocate hands out, inclusive
	maxClaim uint64     // largest host number claim accepts
	used     hostSet
	owners   map[uint64]owner
	pods     map[PodID]*podHosts
	last     uint64 // host number assigned last; allocate continues after it
	// released maps a pod to the main host number this agent released from it (CNI
	// DEL, a reverted ADD) while the Kubernetes state may still show the pod with that
	// address: a stale copy, since the pod has no sandbox here any more. Such a pod is
	// not claimed again from that state. A hint goes when the pod holds an address again,
	// when the Kubernetes state shows it without that address, and at a resync whose
	// state does not show it with that address.
	released map[PodID]uint64
}

// newPodPool returns an empty pool for subnet, which needs at least 3 host bits.
func newPodPool(subnet *net.IPNet) (*podPool, error) {
	n := networkOf(subnet)
	hb := hostBits(n)
	if hb < 3 {
		return nil, fmt.Errorf("pod subnet %s is too small: it needs at least 8 addresses "+
			"(network, gateway, pods, NAT loopback, broadcast)", n)
	}
	p := &podPool{
		subnet:   n,
		lo:       2,
		owners:   make(map[uint64]owner),
		pods:     make(map[PodID]*podHosts),
		last:     1,
		released: make(map[PodID]uint64),
	}
	switch {
	case hb < 64:
		p.maxClaim = uint64(1)<<uint(hb) - 3
	case hb == 64:
		p.maxClaim = math.MaxUint64 - 2
	default: // the NAT loopback and the last address lie beyond 64 bits of offset
		p.maxClaim = math.MaxUint64
	}
	p.hi = min(p.maxClaim, maxAllocHost)
	return p, nil
}

// capacity is the number of addresses allocate can hand out.
func (p *podPool) capacity() uint64 { return p.hi - p.lo + 1 }

// allocated is the number of addresses held.
func (p *podPool) allocated() int { return p.used.len() }

// ipOf returns the address with host number i.
func (p *podPool) ipOf(i uint64) net.IP { return ipAdd(p.subnet.IP, i) }

// gateway returns the pod gateway (host #1).
func (p *podPool) gateway() net.IP { return p.ipOf(1) }

// natLoopback returns the NAT loopback (the last address but one).
func (p *podPool) natLoopback() net.IP { return ipDec(lastAddr(p.subnet)) }

// hostOf returns the host number of ip, if ip lies in the subnet within the first 2^64
// addresses.
func (p *podPool) hostOf(ip net.IP) (uint64, bool) {
	v := normalizeIP(ip)
	if v == nil || !p.subnet.Contains(v) {
		return 0, false
	}
	return ipOffset(p.subnet.IP, v)
}

// allocate gives o the next free address after the one assigned last.
func (p *podPool) allocate(o owner) (uint64, error) {
	if uint64(p.used.len()) >= p.capacity() {
		return 0, p.exhausted()
	}
	start := p.last + 1
	if start < p.lo || start > p.hi {
		start = p.lo
	}
	i, ok := p.used.nextFree(start, p.hi)
	if !ok && start > p.lo {
		i, ok = p.used.nextFree(p.lo, start-1)
	}
	if !ok {
		return 0, p.exhausted()
	}
	p.take(i, o)
	p.last = i
	return i, nil
}

// exhausted is the error of a full pool.
func (p *podPool) exhausted() error {
	return fmt.Errorf("%w in pod subnet %s (%d allocated)", ErrNoFreeIP, p.subnet, p.used.len())
}

// checkClaimable tells why ip cannot be held by a pod, or returns its host number.
func (p *podPool) checkClaimable(ip net.IP) (uint64, error) {
	v := normalizeIP(ip)
	if v == nil || !p.subnet.Contains(v) {
		return 0, fmt.Errorf("%s is not in the pod subnet %s", ip, p.subnet)
	}
	i, ok := ipOffset(p.subnet.IP, v)
	switch {
	case !ok:
		return 0, fmt.Errorf("%s lies beyond the first 2^64 addresses of the pod subnet %s", ip, p.subnet)
	case i == 0:
		return 0, fmt.Errorf("%s is the network address of the pod subnet %s", ip, p.subnet)
	case i == 1:
		return 0, fmt.Errorf("%s is the pod gateway of %s", ip, p.subnet)
	case v.Equal(p.natLoopback()):
		return 0, fmt.Errorf("%s is the NAT loopback of %s", ip, p.subnet)
	case i > p.maxClaim:
		return 0, fmt.Errorf("%s is the last address of the pod subnet %s", ip, p.subnet)
	}
	return i, nil
}

// claim records that o holds ip (an address known from elsewhere: the Kubernetes state
// or an external IPAM). It fails for addresses no pod may hold and for addresses held
// by someone else; claiming what o already holds is a no-op.
func (p *podPool) claim(ip net.IP, o owner) (uint64, error) {
	i, err := p.checkClaimable(ip)
	if err != nil {
		return 0, err
	}
	if cur, held := p.owners[i]; held {
		if cur == o {
			return i, nil
		}
		return 0, fmt.Errorf("%s is already held by %s", ip, cur)
	}
	if prev, ok := p.hostOfOwner(o); ok {
		return 0, fmt.Errorf("%s already holds %s", o, p.ipOf(prev))
	}
	p.take(i, o)
	return i, nil
}

// take records that o holds the free host number i.
func (p *podPool) take(i uint64, o owner) {
	p.used.add(i)
	p.owners[i] = o
	ph := p.pods[o.pod]
	if ph == nil {
		ph = &podHosts{}
		p.pods[o.pod] = ph
	}
	if o.ifName == "" {
		ph.main, ph.hasMain, ph.tentative = i, true, false
		delete(p.released, o.pod)
		return
	}
	if ph.custom == nil {
		ph.custom = make(map[string]uint64)
	}
	ph.custom[o.ifName] = i
}

// drop frees host number i, whoever holds it.
func (p *podPool) drop(i uint64) {
	o, held := p.owners[i]
	if !held {
		return
	}
	p.used.remove(i)
	delete(p.owners, i)
	ph := p.pods[o.pod]
	if o.ifName == "" {
		ph.hasMain = false
	} else {
		delete(ph.custom, o.ifName)
	}
	if !ph.hasMain && len(ph.custom) == 0 {
		delete(p.pods, o.pod)
	}
}

// hostOfOwner returns the host number o holds.
func (p *podPool) hostOfOwner(o owner) (uint64, bool) {
	ph := p.pods[o.pod]
	if ph == nil {
		return 0, false
	}
	if o.ifName == "" {
		return ph.main, ph.hasMain
	}
	i, ok := ph.custom[o.ifName]
	return i, ok
}

// ipOfOwner returns the address o holds, nil if none.
func (p *podPool) ipOfOwner(o owner) net.IP {
	if i, ok := p.hostOfOwner(o); ok {
		return p.ipOf(i)
	}
	return nil
}

// ownerOf returns who holds ip.
func (p *podPool) ownerOf(ip net.IP) (owner, bool) {
	i, ok := p.hostOf(ip)
	if !ok {
		return owner{}, false
	}
	o, held := p.owners[i]
	return o, held
}

// release frees every address of the pod and returns them; the main one is kept as a
// released hint.
func (p *podPool) release(pod PodID) []net.IP {
	ph := p.pods[pod]
	if ph == nil {
		return nil
	}
	var hosts []uint64
	if ph.hasMain {
		hosts = append(hosts, ph.main)
		p.hintReleased(pod, ph.main)
	}
	for _, i := range ph.custom {
		hosts = append(hosts, i)
	}
	freed := make([]net.IP, 0, len(hosts))
	for _, i := range hosts {
		freed = append(freed, p.ipOf(i))
		p.drop(i)
	}
	return freed
}

// hintReleased records that this agent released host i from the pod.
func (p *podPool) hintReleased(pod PodID, i uint64) {
	if _, ok := p.released[pod]; !ok && len(p.released) >= maxReleasedHints {
		for k := range p.released {
			delete(p.released, k)
			break
		}
	}
	p.released[pod] = i
}

// claimTentative is claim of the pod's main address from the Kubernetes state for a pod
// with no CNI ADD here: the address is marked tentative.
func (p *podPool) claimTentative(ip net.IP, pod PodID) error {
	if _, err := p.claim(ip, owner{pod: pod}); err != nil {
		return err
	}
	p.pods[pod].tentative = true
	return nil
}

// tentative tells whether the pod's main address is a tentative one.
func (p *podPool) tentative(pod PodID) bool {
	ph := p.pods[pod]
	return ph != nil && ph.hasMain && ph.tentative
}

// confirmed tells whether the pod holds a main address that is not tentative.
func (p *podPool) confirmed(pod PodID) bool {
	ph := p.pods[pod]
	return ph != nil && ph.hasMain && !ph.tentative
}

// confirm makes the pod's main address, if tentative, an address of a local pod.
func (p *podPool) confirm(pod PodID) {
	if ph := p.pods[pod]; ph != nil {
		ph.tentative = false
	}
}

// followKubePod makes the pod's tentative address follow the Kubernetes state, which
// now shows the pod with ip in the subnet (nil: deleted, moved to another node, no
// address of the subnet): a tentative address that differs is freed, and ip is taken
// tentatively unless the pod holds a confirmed address or this agent released ip from
// it. It returns the address freed and the one taken; err tells why ip could not be
// taken (the freed one is freed all the same). O(1).
func (p *podPool) followKubePod(pod PodID, ip net.IP) (freed, took net.IP, err error) {
	if p.confirmed(pod) {
		return nil, nil, nil // a local pod: its CNI DEL releases it
	}
	var want uint64
	if ip != nil {
		if want, err = p.checkClaimable(ip); err != nil {
			ip = nil
		}
	}
	if i, ok := p.released[pod]; ok {
		if ip != nil && i == want {
			return nil, nil, nil // the copy still shows what this agent released
		}
		delete(p.released, pod)
	}
	if ph := p.pods[pod]; ph != nil && ph.hasMain {
		if ip != nil && ph.main == want {
			return nil, nil, nil
		}
		freed = p.ipOf(ph.main)
		p.drop(ph.main)
	}
	if ip == nil {
		return freed, nil, err
	}
	if err := p.claimTentative(ip, pod); err != nil {
		return freed, nil, err
	}
	return freed, ip, nil
}

// cloneConfirmed returns an independent copy of the pool without its tentative
// addresses and its released hints, which a resync derives from its Kubernetes state.
func (p *podPool) cloneConfirmed() *podPool {
	c, _ := newPodPool(p.subnet) // p.subnet passed the size check already
	for i, o := range p.owners {
		if o.ifName == "" && p.tentative(o.pod) {
			continue
		}
		c.take(i, o)
	}
	c.last = p.last
	return c
}

// highest returns the largest host number held, lo-1 when the pool is empty.
func (p *podPool) highest() uint64 {
	top := p.lo - 1
	for i := range p.owners {
		top = max(top, i)
	}
	return top
}

// PodIPAllocation is one pod's addresses, as served by GET /contiv/v1/ipam/allocations.
type PodIPAllocation struct {
	// PodID identifies the pod.
	PodID PodID
	// MainIP is the address of the pod's main interface (nil: only custom ones); the
	// primary one on a dual-stack node.
	MainIP net.IP
	// MainIPs are the addresses of the main interface of every family, the primary
	// first; set on a dual-stack node only.
	MainIPs []net.IP `json:",omitempty"`
	// CustomIfIPs maps the names of the pod's custom interfaces to their addresses.
	CustomIfIPs map[string]net.IP
}

// IPAllocations is the body of GET /contiv/v1/ipam/allocations.
type IPAllocations struct {
	// Pods are the pods holding addresses, sorted by namespace and name.
	Pods []PodIPAllocation
}

// allocations lists the pods and their addresses, sorted by namespace and name.
func (p *podPool) allocations() []PodIPAllocation {
	out := make([]PodIPAllocation, 0, len(p.pods))
	for id, ph := range p.pods {
		a := PodIPAllocation{PodID: id, CustomIfIPs: make(map[string]net.IP, len(ph.custom))}
		if ph.hasMain {
			a.MainIP = p.ipOf(ph.main)
		}
		for name, i := range ph.custom {
			a.CustomIfIPs[name] = p.ipOf(i)
		}
		out = append(out, a)
	}
	sortAllocations(out)
	return out
}

// sortAllocations sorts by namespace and name.
func sortAllocations(out []PodIPAllocation) {
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].PodID, out[j].PodID
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
}
