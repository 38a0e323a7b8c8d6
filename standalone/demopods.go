package standalone

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
	"sigs.k8s.io/yaml"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/pkg/unarygrpc"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cni"
)

// DefaultDemoNetnsPrefix prefixes the network namespace names of the demo pods:
// <prefix><namespace>-<name>, e.g. ctv-default-client.
const DefaultDemoNetnsPrefix = "ctv-"

// demoRetryInterval is the pause between two attempts of a demo pod's CNI ADD while
// the agent is not ready yet.
const demoRetryInterval = time.Second

// DemoPodsDeps lists what DemoPods needs.
type DemoPodsDeps struct {
	// Log is the logger (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// ClusterFile is the cluster file whose pods scheduled on NodeName are created.
	ClusterFile string
	// NodeName is the agent's node.
	NodeName string
	// CNISocket is the agent's CNI gRPC socket (the podmanager's RemoteCNI server).
	CNISocket string
	// NetnsPrefix prefixes the namespace names; "" means DefaultDemoNetnsPrefix.
	NetnsPrefix string
}

// DemoPods makes the demo carry traffic: for every pod of the cluster file scheduled on
// this node it creates a network namespace (ip netns add), wires it through the agent's
// real CNI path (a RemoteCNI Add on the agent's socket, as contiv-cni sends it) and
// answers, from inside the namespace, on each container port (TCP and UDP as
// declared) with the pod's name: an HTTP request gets an HTTP answer whose body is the
// name, anything else the name and a newline. Close sends the CNI Delete of each pod
// and deletes its namespace.
//
// It must be placed after the controller in the agent's plugin list: the pods are
// added in the background once the event loop runs (AfterInit of everything), and
// deleted in Close, before the event loop stops. Pods added to the cluster file later
// are not created. It needs root and the ip command (iproute2).
type DemoPods struct {
	DemoPodsDeps

	cancel context.CancelFunc
	wg     sync.WaitGroup

	disabled bool // not root, or no ip command: nothing is created

	mu   sync.Mutex
	pods []*demoPod // created, in the order of the file
}

// demoPod is a pod of the cluster file to run here.
type demoPod struct {
	namespace, name string
	ports           []demoPort
	netns           string // name of its network namespace
	ip              string // from the CNI reply
	listeners       []io.Closer
	wired           bool // CNI Add succeeded
}

// demoPort is a container port.
type demoPort struct {
	port  int
	proto string // "TCP" or "UDP"
}

// NewDemoPods returns the component with its dependencies set.
func NewDemoPods(deps DemoPodsDeps) *DemoPods {
	deps.Log = infra.LoggerOr(deps.Log, "standalone-demo-pods")
	if deps.NetnsPrefix == "" {
		deps.NetnsPrefix = DefaultDemoNetnsPrefix
	}
	return &DemoPods{DemoPodsDeps: deps}
}

// String names the component.
func (d *DemoPods) String() string { return "standalone-demo-pods" }

// Init checks that namespaces can be created here; if not (not root, no ip command),
// it logs why and the component does nothing: the demo runs without pods, as before.
func (d *DemoPods) Init() error {
	if os.Geteuid() != 0 {
		d.disabled = true
		d.Log.Warn("demo pods are not created: network namespaces need root")
		return nil
	}
	if _, err := exec.LookPath("ip"); err != nil {
		d.disabled = true
		d.Log.WithError(err).Warn("demo pods are not created: the ip command (iproute2) is missing")
	}
	return nil
}

// AfterInit reads the cluster file and starts creating the local pods in the
// background.
func (d *DemoPods) AfterInit() error {
	if d.disabled {
		return nil
	}
	data, err := os.ReadFile(d.ClusterFile)
	if err != nil {
		return fmt.Errorf("demo pods: %w", err)
	}
	pods, err := localDemoPods(data, d.NodeName)
	if err != nil {
		return fmt.Errorf("demo pods: cluster file %s: %w", d.ClusterFile, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for _, p := range pods {
			p.netns = d.NetnsPrefix + p.namespace + "-" + p.name
			d.mu.Lock()
			d.pods = append(d.pods, p)
			d.mu.Unlock()
			if err := d.start(ctx, p); err != nil {
				if ctx.Err() != nil {
					return
				}
				d.Log.WithError(err).WithField("pod", p.namespace+"/"+p.name).Error("demo pod not created")
				continue
			}
			d.Log.WithFields(logrus.Fields{"pod": p.namespace + "/" + p.name, "ip": p.ip, "netns": p.netns,
				"ports": p.ports}).Info("demo pod running (ip netns exec <netns> ... runs a command in it)")
		}
	}()
	return nil
}

// start creates the pod's namespace, wires it through CNI (retrying while the agent is
// not ready) and starts its responders.
func (d *DemoPods) start(ctx context.Context, p *demoPod) error {
	_ = exec.Command("ip", "netns", "delete", p.netns).Run() // a leftover of a killed run
	if out, err := exec.Command("ip", "netns", "add", p.netns).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns add %s: %v: %s", p.netns, err, out)
	}
	if out, err := exec.Command("ip", "-n", p.netns, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return fmt.Errorf("ip -n %s link set lo up: %v: %s", p.netns, err, out)
	}
	for {
		reply, err := d.call(ctx, cni.RemoteCNI_Add_FullMethodName, p)
		if err == nil && reply.GetResult() != 0 {
			err = fmt.Errorf("CNI Add: %s", reply.GetError())
		}
		if err == nil {
			p.wired = true
			for _, ifc := range reply.GetInterfaces() {
				for _, a := range ifc.GetIpAddresses() {
					p.ip = a.GetAddress()
				}
			}
			break
		}
		d.Log.WithError(err).WithField("pod", p.name).Debug("demo pod: CNI Add failed, retrying")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(demoRetryInterval):
		}
	}
	path := filepath.Join("/var/run/netns", p.netns)
	for _, port := range p.ports {
		l, err := listenInNetns(path, port, p.name)
		if err != nil {
			return err
		}
		p.listeners = append(p.listeners, l)
	}
	return nil
}

// call sends one RemoteCNI request for p, as contiv-cni does.
func (d *DemoPods) call(ctx context.Context, method string, p *demoPod) (*cni.CNIReply, error) {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	req := &cni.CNIRequest{
		Version:          "1.1.0",
		ContainerId:      "demo-" + p.namespace + "-" + p.name,
		NetworkNamespace: filepath.Join("/var/run/netns", p.netns),
		InterfaceName:    "eth0",
		ExtraNwConfig:    `{"cniVersion":"1.1.0","name":"contiv-demo","type":"contiv-cni"}`,
		ExtraArguments:   "IgnoreUnknown=1;K8S_POD_NAMESPACE=" + p.namespace + ";K8S_POD_NAME=" + p.name,
	}
	reply := &cni.CNIReply{}
	if err := unarygrpc.Call(ctx, "unix", d.CNISocket, method, req, reply); err != nil {
		return nil, err
	}
	return reply, nil
}

// Close stops creating pods, stops the responders, deletes the pods through CNI and
// removes their namespaces.
func (d *DemoPods) Close() error {
	if d.cancel != nil {
		d.cancel()
		d.wg.Wait()
		d.cancel = nil
	}
	d.mu.Lock()
	pods := d.pods
	d.pods = nil
	d.mu.Unlock()
	var errs []error
	for _, p := range pods {
		for _, l := range p.listeners {
			l.Close()
		}
		if p.wired {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			reply, err := d.call(ctx, cni.RemoteCNI_Delete_FullMethodName, p)
			cancel()
			if err == nil && reply.GetResult() != 0 {
				err = errors.New(reply.GetError())
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("demo pod %s/%s: CNI Delete: %w", p.namespace, p.name, err))
			}
		}
		if out, err := exec.Command("ip", "netns", "delete", p.netns).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip netns delete %s: %v: %s", p.netns, err, out))
		}
	}
	return errors.Join(errs...)
}

// localDemoPods returns the pods of the cluster file scheduled on node, with their
// container ports.
func localDemoPods(data []byte, node string) ([]*demoPod, error) {
	var pods []*demoPod
	for i, doc := range splitYAMLDocuments(data) {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
			Spec struct {
				NodeName    string `json:"nodeName"`
				HostNetwork bool   `json:"hostNetwork"`
				Containers  []struct {
					Ports []struct {
						ContainerPort int    `json:"containerPort"`
						Protocol      string `json:"protocol"`
					} `json:"ports"`
				} `json:"containers"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if obj.Kind != "Pod" || obj.Spec.NodeName != node || obj.Spec.HostNetwork {
			continue
		}
		p := &demoPod{namespace: obj.Metadata.Namespace, name: obj.Metadata.Name}
		if p.namespace == "" {
			p.namespace = "default"
		}
		for _, c := range obj.Spec.Containers {
			for _, port := range c.Ports {
				proto := strings.ToUpper(port.Protocol)
				if proto == "" {
					proto = "TCP"
				}
				if proto != "TCP" && proto != "UDP" {
					continue
				}
				p.ports = append(p.ports, demoPort{port: port.ContainerPort, proto: proto})
			}
		}
		pods = append(pods, p)
	}
	return pods, nil
}

// splitYAMLDocuments splits a multi-document YAML file at its "---" lines.
func splitYAMLDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimRight(line, " \t") == "---" {
			docs = append(docs, []byte(strings.Join(cur, "\n")))
			cur = nil
			continue
		}
		cur = append(cur, line)
	}
	return append(docs, []byte(strings.Join(cur, "\n")))
}

// listenInNetns opens the responder socket of port inside the namespace at path (on an
// OS thread that entered it and is never returned to the scheduler) and serves it.
func listenInNetns(path string, port demoPort, name string) (io.Closer, error) {
	type result struct {
		c   io.Closer
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			ch <- result{err: fmt.Errorf("open %s: %w", path, err)}
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("setns %s: %w", path, err)}
			return
		}
		addr := fmt.Sprintf(":%d", port.port)
		if port.proto == "UDP" {
			c, err := net.ListenPacket("udp4", addr)
			ch <- result{c, err}
			return
		}
		l, err := net.Listen("tcp4", addr)
		ch <- result{l, err}
	}()
	r := <-ch
	if r.err != nil {
		return nil, fmt.Errorf("demo pod %s: listen on %s %d: %w", name, port.proto, port.port, r.err)
	}
	switch c := r.c.(type) {
	case net.Listener:
		go serveDemoTCP(c, name)
	case net.PacketConn:
		go serveDemoUDP(c, name)
	}
	return r.c, nil
}

// serveDemoTCP answers each connection with the name: as HTTP when the client sends an
// HTTP request within a short time, else as a line.
func serveDemoTCP(l net.Listener, name string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			buf := make([]byte, 4096)
			n, _ := c.Read(buf)
			_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			body := name + "\n"
			if isHTTPRequest(buf[:n]) {
				fmt.Fprintf(c, "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
				return
			}
			_, _ = io.WriteString(c, body)
		}()
	}
}

func isHTTPRequest(b []byte) bool {
	for _, m := range []string{"GET ", "HEAD ", "POST ", "PUT ", "DELETE ", "OPTIONS "} {
		if strings.HasPrefix(string(b), m) {
			return true
		}
	}
	return false
}

// serveDemoUDP answers each datagram with the name.
func serveDemoUDP(c net.PacketConn, name string) {
	buf := make([]byte, 2048)
	for {
		_, from, err := c.ReadFrom(buf)
		if err != nil {
			return
		}
		_, _ = c.WriteTo([]byte(name+"\n"), from)
	}
}
