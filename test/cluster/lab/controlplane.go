package lab

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// ServiceCIDR is the IPv4 Service ClusterIP range of the API server (and of
// contiv.conf); ServiceCIDRIPv6 (family.go) is the IPv6 one.
const ServiceCIDR = "10.96.0.0/12"

// controllers are the kube-controller-manager controllers the lab runs (1.34 names):
// Endpoints and EndpointSlices computed by Kubernetes itself, the default ServiceAccount
// that Pods need, garbage collection (a deleted Service takes its EndpointSlices along),
// Namespace deletion, and Deployments through ReplicaSets (the lab's scheduler binds
// their Pods).
var controllers = []string{
	"endpoints-controller",
	"endpointslice-controller",
	"endpointslice-mirroring-controller",
	"serviceaccount-controller",
	"garbage-collector-controller",
	"namespace-controller",
	"deployment-controller",
	"replicaset-controller",
}

// freePort returns a TCP port free on 127.0.0.1 right now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// etcdServer is an etcd process of the lab (one for Kubernetes, one for Contiv).
type etcdServer struct {
	proc *Process
	// ClientURL is http://127.0.0.1:<port>.
	ClientURL string
}

// startEtcd starts etcd with its data in dir and waits until it is healthy.
func startEtcd(ctx context.Context, binDir, dir, name string) (*etcdServer, error) {
	client, err := freePort()
	if err != nil {
		return nil, err
	}
	peer, err := freePort()
	if err != nil {
		return nil, err
	}
	clientURL := "http://127.0.0.1:" + strconv.Itoa(client)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := newProcess(name, filepath.Join(dir, "etcd.log"), "", nil,
		filepath.Join(binDir, "etcd"),
		"--name", name,
		"--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", name+"="+peerURL,
		"--unsafe-no-fsync", "--log-level", "warn")
	e := &etcdServer{proc: p, ClientURL: clientURL}
	if err := e.start(ctx); err != nil {
		_ = p.Stop(syscall.SIGTERM, 5*time.Second)
		return nil, err
	}
	return e, nil
}

// start (re)starts the process and waits for /health.
func (e *etcdServer) start(ctx context.Context) error {
	if err := e.proc.Start(); err != nil {
		return err
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	return testkit.Wait(ctx, 30*time.Second, e.proc.Name+" healthy", func() error {
		if err := e.proc.exitError(); err != nil {
			return testkit.Permanent(err)
		}
		resp, err := hc.Get(e.ClientURL + "/health")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var h struct {
			Health string `json:"health"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			return err
		}
		if h.Health != "true" {
			return fmt.Errorf("health %q", h.Health)
		}
		return nil
	})
}

// controlPlane is kube-apiserver and kube-controller-manager with their etcd.
type controlPlane struct {
	etcd              *etcdServer
	apiserver         *Process
	controllerManager *Process

	// URL is https://127.0.0.1:<port> of the API server.
	URL string
	// Token authenticates as a member of system:masters.
	Token string
	// Kubeconfig is the path of a kubeconfig for kubectl and contiv-ksr.
	Kubeconfig string
	restConfig *rest.Config
}

// startControlPlane starts etcd, kube-apiserver and kube-controller-manager in dir and
// waits until the API server is ready and the default ServiceAccount exists.
func startControlPlane(ctx context.Context, binDir, dir string, family IPFamily, cl *cleanups) (*controlPlane, error) {
	cp := &controlPlane{}
	etcdDir := filepath.Join(dir, "etcd-k8s")
	etcd, err := startEtcd(ctx, binDir, etcdDir, "etcd-k8s")
	if etcd != nil {
		cl.add("etcd for Kubernetes", func() error { return etcd.proc.Stop(syscall.SIGTERM, 10*time.Second) })
	}
	if err != nil {
		return nil, err
	}
	cp.etcd = etcd

	pkiDir := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		return nil, err
	}
	saKey, saPub := filepath.Join(pkiDir, "sa.key"), filepath.Join(pkiDir, "sa.pub")
	if err := writeECKeyPair(saKey, saPub); err != nil {
		return nil, fmt.Errorf("service-account key: %w", err)
	}
	token, err := randomHex(16)
	if err != nil {
		return nil, err
	}
	cp.Token = token
	tokenFile := filepath.Join(pkiDir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(token+`,lab-admin,lab-admin,"system:masters"`+"\n"), 0o600); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cp.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	cp.apiserver = newProcess("kube-apiserver", filepath.Join(dir, "kube-apiserver.log"), "", nil,
		filepath.Join(binDir, "kube-apiserver"),
		"--etcd-servers="+etcd.ClientURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(pkiDir, "apiserver"),
		"--service-account-key-file="+saPub,
		"--service-account-signing-key-file="+saKey,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range="+family.serviceCIDRs(),
		"--token-auth-file="+tokenFile,
		"--authorization-mode=RBAC",
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false",
		"--v=0")
	cl.add("kube-apiserver", func() error {
		// It may wait up to 60 s for open watches after SIGTERM; Stop kills it after 5 s.
		_ = cp.apiserver.Stop(syscall.SIGTERM, 5*time.Second)
		return nil
	})
	if err := cp.startAPIServer(ctx); err != nil {
		return nil, err
	}

	cp.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(cp.Kubeconfig, []byte(kubeconfig(cp.URL, token)), 0o600); err != nil {
		return nil, err
	}
	cp.restConfig = &rest.Config{
		Host:            cp.URL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             200,
		Burst:           400,
	}
	cmArgs := append([]string{filepath.Join(binDir, "kube-controller-manager"), "--kubeconfig=" + cp.Kubeconfig,
		"--leader-elect=false", "--secure-port=0",
		"--controllers=" + strings.Join(controllers, ",")},
		family.controllerManagerFlags()...)
	cp.controllerManager = newProcess("kube-controller-manager", filepath.Join(dir, "kube-controller-manager.log"), "", nil,
		append(cmArgs, "--v=0")...)
	cl.add("kube-controller-manager", func() error { return cp.controllerManager.Stop(syscall.SIGTERM, 15*time.Second) })
	if err := cp.controllerManager.Start(); err != nil {
		return nil, err
	}
	kube, err := cp.client()
	if err != nil {
		return nil, err
	}
	err = testkit.Wait(ctx, 60*time.Second, "the default ServiceAccount exists", func() error {
		if err := cp.controllerManager.exitError(); err != nil {
			return testkit.Permanent(err)
		}
		_, err := kube.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	if err != nil {
		return nil, err
	}
	return cp, nil
}

// startAPIServer (re)starts kube-apiserver and waits for /readyz.
func (cp *controlPlane) startAPIServer(ctx context.Context) error {
	if err := cp.apiserver.Start(); err != nil {
		return err
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the lab's self-signed server on loopback
	}}
	defer hc.CloseIdleConnections()
	return testkit.Wait(ctx, 90*time.Second, "kube-apiserver ready", func() error {
		if err := cp.apiserver.exitError(); err != nil {
			return testkit.Permanent(err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cp.URL+"/readyz", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+cp.Token)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %d %s", resp.StatusCode, strings.TrimSpace(string(body)))
		}
		return nil
	})
}

// client returns a new clientset as cluster admin.
func (cp *controlPlane) client() (kubernetes.Interface, error) {
	c, err := kubernetes.NewForConfig(rest.CopyConfig(cp.restConfig))
	if err != nil {
		return nil, fmt.Errorf("kubernetes client for %s: %w", cp.URL, err)
	}
	return c, nil
}

// ensureNamespace waits for the namespace's default ServiceAccount (Pods need it),
// creating the namespace when it does not exist.
func ensureNamespace(ctx context.Context, kube kubernetes.Interface, name string) error {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return testkit.Wait(ctx, 30*time.Second, "ServiceAccount "+name+"/default", func() error {
		_, err := kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// kubeconfig renders a kubeconfig for the server with a bearer token.
func kubeconfig(server, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: lab-admin
  user:
    token: %s
contexts:
- name: lab
  context:
    cluster: lab
    user: lab-admin
current-context: lab
`, server, token)
}

// writeECKeyPair writes a new P-256 key pair in PEM: the private key (PKCS#8), with which
// kube-apiserver signs service-account tokens, and the public key (PKIX), with which it
// verifies them.
func writeECKeyPair(keyPath, pubPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	return os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random bytes: %w", err)
	}
	return hex.EncodeToString(b), nil
}
