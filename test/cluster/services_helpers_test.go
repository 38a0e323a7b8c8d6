package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contiv-vpp/contiv-vpp/internal/nsrun"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/test/cluster/lab"
)

// podsOnNodes creates perNode pods <app>-<node>-<i> (label app=<app>) on each of the
// nodes and waits until they are ready; it returns them by name.
func podsOnNodes(t *testing.T, l *lab.Lab, ns, app string, perNode int, nodes ...*lab.Node) map[string]corev1.Pod {
	t.Helper()
	ctx := testCtx(t, 3*time.Minute)
	for _, n := range nodes {
		for i := range perNode {
			p := echoPod(fmt.Sprintf("%s-%s-%d", app, n.Name, i), app, n.Name)
			if _, err := l.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create pod %s/%s: %v", ns, p.Name, err)
			}
		}
	}
	ready, err := l.WaitPodsReady(ctx, ns, "app="+app, perNode*len(nodes), 2*time.Minute)
	if err != nil {
		t.Fatalf("pods app=%s in %s: %v", app, ns, err)
	}
	out := make(map[string]corev1.Pod, len(ready))
	for _, p := range ready {
		out[p.Name] = p
	}
	return out
}

// startPod creates the pod and waits until it is ready.
func startPod(t *testing.T, l *lab.Lab, ns string, pod *corev1.Pod) corev1.Pod {
	t.Helper()
	ctx := testCtx(t, 3*time.Minute)
	if _, err := l.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s/%s: %v", ns, pod.Name, err)
	}
	var out corev1.Pod
	testkit.Eventually(t, 2*time.Minute, "pod "+pod.Name+" ready", func() error {
		got, err := l.Kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !podIsReady(got) || got.Status.PodIP == "" {
			return fmt.Errorf("phase %s, ready %v, IP %q", got.Status.Phase, podIsReady(got), got.Status.PodIP)
		}
		out = *got
		return nil
	})
	return out
}

// podNames returns the names of the pods, sorted.
func podNames(pods map[string]corev1.Pod) []string {
	return slices.Sorted(maps.Keys(pods))
}

// answersPerRound is the least number of connections of a round of onlyTheseAnswer: a
// round in which a pod answers one connection in three passes by chance with
// probability (2/3)^48, about 4e-9.
const answersPerRound = 48

// onlyTheseAnswer waits until, in one round of connections from d to addr, every pod of
// want answers and no other pod does, and no connection fails.
func onlyTheseAnswer(t *testing.T, d dialer, addr string, want []string, what string) {
	t.Helper()
	testkit.Eventually(t, 60*time.Second, what, func() error {
		got, err := answers(d, addr, max(8*len(want), answersPerRound))
		if err != nil {
			return fmt.Errorf("answers %v, then: %w", got, err)
		}
		for p := range got {
			if !slices.Contains(want, p) {
				return fmt.Errorf("answered by %s, want only %v (answers %v)", p, want, got)
			}
		}
		for _, p := range want {
			if got[p] == 0 {
				return fmt.Errorf("%s never answered (answers %v)", p, got)
			}
		}
		return nil
	})
}

// answeredBy opens one connection from d to addr and returns an error unless the pod
// answers it.
func answeredBy(d dialer, addr, pod string) error {
	got, _, err := probe(d, addr, 2*time.Second)
	if err == nil && got != pod {
		return fmt.Errorf("%s answered by %s, want %s", addr, got, pod)
	}
	return err
}

// isTimeout tells whether err is a connection attempt that got no answer at all (a
// dropped packet), not a refusal or an unreachable.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// dropped opens tries connections from d to addr, each waiting timeout, and returns an
// error unless every one got no answer at all (as a packet dropped on its way).
func dropped(d dialer, addr string, tries int, timeout time.Duration) error {
	for range tries {
		pod, client, err := probe(d, addr, timeout)
		switch {
		case err == nil:
			return fmt.Errorf("%s answered by %s seeing client %s, want dropped", addr, pod, client)
		case !isTimeout(err):
			return fmt.Errorf("%s: %w, want no answer (dropped)", addr, err)
		}
	}
	return nil
}

// rejectedTCP opens one TCP connection from d to addr and returns an error unless it is
// refused with the errno of a reject route (rejectErrno) within limit (it gives up after
// a second more).
func rejectedTCP(d dialer, addr string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit+time.Second)
	defer cancel()
	start := time.Now()
	conn, err := d(ctx, "tcp", addr)
	if err == nil {
		conn.Close()
		return fmt.Errorf("TCP %s: connected, want %v", addr, rejectErrno(addr))
	}
	return rejectedWithin(err, time.Since(start), limit, addr, "TCP "+addr)
}

// rejectErrno is the error a Linux socket reports when VPP's reject route (ip4-null or
// ip6-null, ICMP_PROHIBIT) answers its packet to addr: EHOSTUNREACH for ICMP 3/10
// (icmp_err_convert, net/ipv4/icmp.c), EACCES for ICMPv6 1/1, administratively
// prohibited (tab_unreach of icmpv6_err_convert, net/ipv6/icmp.c); both abort a TCP
// connect and are hard errors on a connected UDP socket.
func rejectErrno(addr string) syscall.Errno {
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return syscall.EACCES
	}
	return syscall.EHOSTUNREACH
}

// rejectedWithin checks that err is the reject errno of addr (rejectErrno) and came
// within limit.
func rejectedWithin(err error, took, limit time.Duration, addr, what string) error {
	want := rejectErrno(addr)
	if !errors.Is(err, want) {
		return fmt.Errorf("%s: %v after %v, want %v", what, err, took.Round(time.Millisecond), want)
	}
	if took > limit {
		return fmt.Errorf("%s: %v after %v, want within %v", what, want, took.Round(time.Millisecond), limit)
	}
	return nil
}

// rejectedEachTime checks tries times that a TCP connection to tcpAddr and a UDP
// datagram to udpAddr from d are rejected within limit (rejectedTCP, rejectedUDP).
func rejectedEachTime(t *testing.T, d dialer, tcpAddr, udpAddr string, limit time.Duration, tries int) {
	t.Helper()
	for i := range tries {
		// real time: VPP's ip4-null and ip6-null answer one error per (source,
		// destination) per 0.1 s.
		time.Sleep(150 * time.Millisecond)
		if err := rejectedTCP(d, tcpAddr, limit); err != nil {
			t.Errorf("attempt %d: %v", i, err)
		}
		// real time: as above.
		time.Sleep(150 * time.Millisecond)
		if err := rejectedUDP(d, udpAddr, limit); err != nil {
			t.Errorf("attempt %d: %v", i, err)
		}
	}
}

// udpAsk sends one datagram on the connected UDP socket and returns the answer, or the
// error the socket reports (an ICMP error arriving after the send, or the timeout).
func udpAsk(conn net.Conn, timeout time.Duration) (reply, error) {
	if _, err := conn.Write([]byte("hello\n")); err != nil {
		return reply{}, err
	}
	_ = conn.SetReadDeadline(time.Now().Add(timeout))
	buf := make([]byte, 1024)
	n, err := conn.Read(buf)
	if err != nil {
		return reply{}, err
	}
	f := strings.Fields(string(buf[:n]))
	if len(f) != 3 {
		return reply{}, fmt.Errorf("UDP answer %q from %s", buf[:n], conn.RemoteAddr())
	}
	return reply{f[0], f[1], f[2]}, nil
}

// rejectedUDP sends one datagram from a new connected UDP socket of d to addr and
// returns an error unless the socket reports the reject errno of addr (rejectErrno) within limit.
func rejectedUDP(d dialer, addr string, limit time.Duration) error {
	conn, err := d(context.Background(), "udp", addr)
	if err != nil {
		return fmt.Errorf("UDP socket to %s: %w", addr, err)
	}
	defer conn.Close()
	start := time.Now()
	r, err := udpAsk(conn, time.Second)
	if err == nil {
		return fmt.Errorf("UDP %s: answered by %s, want %v", addr, r.pod, rejectErrno(addr))
	}
	return rejectedWithin(err, time.Since(start), limit, addr, "UDP "+addr)
}

// packetCounter counts the IPv4 packets an interface of a network namespace receives,
// by destination address (an AF_PACKET socket: what a capture on that link sees).
type packetCounter struct {
	fd   int
	stop chan struct{}
	wg   sync.WaitGroup

	mu    sync.Mutex
	byDst map[string]int
}

// countPackets starts counting the IPv4 packets received by the interface ifName of the
// network namespace netns; the counter stops when t ends.
func countPackets(t *testing.T, netns, ifName string) *packetCounter {
	t.Helper()
	pc := &packetCounter{fd: -1, stop: make(chan struct{}), byDst: make(map[string]int)}
	proto := int(htons(unix.ETH_P_IP))
	err := nsrun.Run(lab.NetnsDir+"/"+netns, func() error {
		ifi, err := net.InterfaceByName(ifName)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, proto)
		if err != nil {
			return fmt.Errorf("AF_PACKET socket: %w", err)
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: uint16(proto), Ifindex: ifi.Index}); err != nil {
			unix.Close(fd)
			return fmt.Errorf("bind to %s: %w", ifName, err)
		}
		tv := unix.NsecToTimeval((100 * time.Millisecond).Nanoseconds())
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			unix.Close(fd)
			return err
		}
		pc.fd = fd
		return nil
	})
	if err != nil {
		t.Fatalf("count packets on %s of %s: %v", ifName, netns, err)
	}
	pc.wg.Add(1)
	go pc.read()
	t.Cleanup(pc.close)
	return pc
}

// htons turns a 16-bit value to network byte order (AF_PACKET's protocol field).
func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (pc *packetCounter) read() {
	defer pc.wg.Done()
	buf := make([]byte, 2048)
	for {
		select {
		case <-pc.stop:
			return
		default:
		}
		n, _, err := unix.Recvfrom(pc.fd, buf, 0)
		if err != nil || n < 20 || buf[0]>>4 != 4 {
			continue // the receive timeout, or not IPv4
		}
		dst := net.IP(binary.BigEndian.AppendUint32(nil, binary.BigEndian.Uint32(buf[16:20]))).String()
		pc.mu.Lock()
		pc.byDst[dst]++
		pc.mu.Unlock()
	}
}

// count returns how many packets to dst were received so far.
func (pc *packetCounter) count(dst string) int {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.byDst[dst]
}

func (pc *packetCounter) close() {
	select {
	case <-pc.stop:
		return
	default:
	}
	close(pc.stop)
	pc.wg.Wait()
	unix.Close(pc.fd)
}

// freeClusterIP returns an address of the lab's Service CIDR that no Service has, from
// the band the API server keeps for clusterIPs chosen by users (KEP-3070: the first
// min(max(16, size/16), 256) addresses, allocated dynamically only once the rest of the
// range is full): 10.96.0.200 to .254.
func freeClusterIP(t *testing.T, l *lab.Lab) string {
	t.Helper()
	ctx := testCtx(t, time.Minute)
	list, err := l.Kube.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list Services: %v", err)
	}
	used := make(map[string]bool)
	for _, s := range list.Items {
		for _, ip := range s.Spec.ClusterIPs {
			used[ip] = true
		}
	}
	base := netip.MustParsePrefix(lab.ServiceCIDR).Addr().As4()
	for last := 200; last < 255; last++ {
		base[3] = byte(last)
		if a := netip.AddrFrom4(base).String(); !used[a] {
			return a
		}
	}
	t.Fatalf("no free cluster IP from .200 to .254 of the first /24 of %s", lab.ServiceCIDR)
	return ""
}
