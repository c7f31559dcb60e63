package kubetest

import (
	"bytes"
	"context"
	"crypto/tls"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

//go:embed kwok-stages.yaml
var kwokStages []byte

// The users the API server knows (by static token). AdapterUser is the
// name a pod running as the fairsched-kube ServiceAccount of namespace
// fairsched has, so that deploy/kubernetes's RBAC authorizes it.
const (
	AdminUser        = "kubetest-admin"
	AdapterUser      = "system:serviceaccount:fairsched:fairsched-kube"
	AdapterNamespace = "fairsched"
	// SchedulerUser is kube-scheduler's user, whom the API server's
	// bootstrap RBAC (and its priority and fairness) knows.
	SchedulerUser = "system:kube-scheduler"
)

// NodeAnnotation marks the nodes KWOK manages.
const NodeAnnotation = "kwok.x-k8s.io/node"

// DefaultControllers are the kube-controller-manager controllers a cluster
// runs: Jobs, Deployments (through ReplicaSets), PodDisruptionBudgets'
// status (which eviction reads), cascading deletion and namespace deletion.
// Nodes have no lifecycle controller: KWOK's nodes stay Ready.
var DefaultControllers = []string{
	"job-controller",
	"garbage-collector-controller",
	"namespace-controller",
	"replicaset-controller",
	"deployment-controller",
	"disruption-controller",
}

// Options shape a cluster. The zero value runs etcd, kube-apiserver, KWOK
// and kube-controller-manager with DefaultControllers.
type Options struct {
	// SchedulerName, when set, also runs kube-scheduler with one profile of
	// this name (StartScheduler runs one later).
	SchedulerName string
	// Controllers replaces DefaultControllers; NoControllerManager runs none.
	Controllers         []string
	NoControllerManager bool
	// QPS and Burst are every client's rate limits: the rest.Configs the
	// cluster returns, KWOK's, the controller manager's and the
	// scheduler's (default 5000 and 10000: the API server, not the client,
	// should be what limits a test or a benchmark).
	QPS   float32
	Burst int
	// KWOKParallelism is how many pod and node stages KWOK plays at once
	// (default 16).
	KWOKParallelism int
	// StartTimeout bounds each component's start (default 3 minutes: the
	// machine may be busy).
	StartTimeout time.Duration
	// Dir holds the data, configuration and logs (default a temporary
	// directory that Close removes unless KUBETEST_KEEP=1).
	Dir string
	// Bins is the directory of the binaries (default BinDir()).
	Bins string
	// APIServerArgs are added to kube-apiserver's flags.
	APIServerArgs []string
	// Logf, when set, is told what starts and how long it took.
	Logf func(format string, args ...any)
}

// Cluster is a running control plane. Its fields are read-only.
type Cluster struct {
	// Dir holds the data, the configuration files and the logs
	// (<component>.log) of the cluster.
	Dir  string
	Bins string
	// Server is the API server's URL, https://127.0.0.1:PORT; CAFile
	// verifies its certificate.
	Server string
	CAFile string
	// Admin is a system:masters user; Adapter is AdapterUser, with only
	// what RBAC grants it (ApplyAdapterRBAC grants deploy/kubernetes's).
	Admin             *rest.Config
	Adapter           *rest.Config
	AdminKubeconfig   string
	AdapterKubeconfig string
	// Client is a clientset of Admin.
	Client kubernetes.Interface

	schedulerKubeconfig string

	opts    Options
	rmDir   bool
	pki     *pki
	mu      sync.Mutex
	procs   []*proc // in start order; Close stops them in reverse
	closed  bool
	started time.Time
}

// Start runs a cluster. Close stops it; on an error Start has already
// stopped what it started.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if opts.QPS == 0 {
		opts.QPS = 5000
	}
	if opts.Burst == 0 {
		opts.Burst = 10000
	}
	if opts.KWOKParallelism == 0 {
		opts.KWOKParallelism = 16
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 3 * time.Minute
	}
	if opts.Controllers == nil {
		opts.Controllers = DefaultControllers
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	c := &Cluster{opts: opts, started: time.Now()}
	if opts.Bins == "" {
		if c.Bins, err = BinDir(); err != nil {
			return nil, err
		}
	} else {
		c.Bins = opts.Bins
	}
	if opts.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "kubetest-"); err != nil {
			return nil, fmt.Errorf("cannot make the cluster's directory: %w", err)
		}
		c.rmDir = os.Getenv("KUBETEST_KEEP") != "1"
	} else {
		c.Dir = opts.Dir
		if err := os.MkdirAll(c.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("cannot make the cluster's directory: %w", err)
		}
	}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if c.pki, err = newPKI(c.Dir); err != nil {
		return nil, err
	}
	c.CAFile = c.pki.caFile
	etcdURL, err := c.startEtcd(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.startAPIServer(ctx, etcdURL); err != nil {
		return nil, err
	}
	if err := c.startKWOK(ctx); err != nil {
		return nil, err
	}
	if !opts.NoControllerManager {
		if err := c.startControllerManager(ctx); err != nil {
			return nil, err
		}
	}
	if opts.SchedulerName != "" {
		if _, err := c.StartScheduler(ctx, opts.SchedulerName); err != nil {
			return nil, err
		}
	}
	c.opts.Logf("kubetest: cluster up in %v (%s, logs in %s)", time.Since(c.started).Round(time.Millisecond), c.Server, c.Dir)
	return c, nil
}

// Close stops every component (SIGTERM, then SIGKILL to its process group)
// and removes the cluster's directory unless it was given or KUBETEST_KEEP=1.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	procs := c.procs
	c.procs = nil
	c.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].stop(5 * time.Second)
	}
	if c.rmDir {
		return os.RemoveAll(c.Dir)
	}
	return nil
}

// Logs returns the end of every component's log, for a failed test.
func (c *Cluster) Logs(lines int) string {
	c.mu.Lock()
	procs := append([]*proc(nil), c.procs...)
	c.mu.Unlock()
	var b strings.Builder
	for _, p := range procs {
		fmt.Fprintf(&b, "--- %s (%s)\n%s\n", p.name, p.logPath, p.tail(lines))
	}
	return b.String()
}

func (c *Cluster) run(name, bin string, args []string) (*proc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("kubetest: the cluster is closed")
	}
	p, err := startProc(c.Dir, name, filepath.Join(c.Bins, bin), args, nil)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

func (c *Cluster) startEtcd(ctx context.Context) (string, error) {
	start := time.Now()
	p, err := c.run("etcd", "etcd", []string{"--data-dir", filepath.Join(c.Dir, "etcd"), "--listen", "127.0.0.1:0"})
	if err != nil {
		return "", err
	}
	addr := make(chan string, 1)
	p.watchLines(func(line string) {
		if rest, ok := strings.CutPrefix(line, "etcd listening on "); ok {
			select {
			case addr <- strings.TrimSpace(rest):
			default:
			}
		}
	})
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	select {
	case u := <-addr:
		p.watchLines(nil)
		c.opts.Logf("kubetest: etcd on %s in %v", u, time.Since(start).Round(time.Millisecond))
		return u, nil
	case <-p.done:
		return "", p.exitError()
	case <-ctx.Done():
		return "", fmt.Errorf("etcd did not say where it listens within %v: %w; the end of %s:\n%s", c.opts.StartTimeout, ctx.Err(), p.logPath, p.tail(40))
	}
}

func (c *Cluster) startAPIServer(ctx context.Context, etcdURL string) error {
	tokens := filepath.Join(c.Dir, "tokens.csv")
	adminToken, adapterToken, schedToken := randomToken(), randomToken(), randomToken()
	csv := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n%s,%s,%s,\"system:serviceaccounts,system:serviceaccounts:%s\"\n%s,%s,%s\n",
		adminToken, AdminUser, "kubetest-admin-uid", adapterToken, AdapterUser, "kubetest-adapter-uid", AdapterNamespace,
		schedToken, SchedulerUser, "kubetest-scheduler-uid")
	if err := os.WriteFile(tokens, []byte(csv), 0o600); err != nil {
		return fmt.Errorf("cannot write %s: %w", tokens, err)
	}
	// A free port can be taken between the probe and the bind: try again.
	for attempt := 1; ; attempt++ {
		start := time.Now()
		port, err := freePort()
		if err != nil {
			return err
		}
		args := []string{
			"--etcd-servers=" + etcdURL,
			"--etcd-prefix=/registry",
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			"--tls-cert-file=" + c.pki.certFile,
			"--tls-private-key-file=" + c.pki.keyFile,
			"--client-ca-file=" + c.pki.caFile,
			// the request-header CA the API server publishes in
			// kube-system/extension-apiserver-authentication: without it,
			// its CA-bundle controller logs an error every few seconds
			"--requestheader-client-ca-file=" + c.pki.caFile,
			"--requestheader-allowed-names=kubetest-front-proxy",
			"--requestheader-username-headers=X-Remote-User",
			"--requestheader-group-headers=X-Remote-Group",
			"--requestheader-extra-headers-prefix=X-Remote-Extra-",
			"--token-auth-file=" + tokens,
			"--authorization-mode=Node,RBAC",
			"--service-account-issuer=https://kubernetes.default.svc",
			"--service-account-key-file=" + c.pki.saPubFile,
			"--service-account-signing-key-file=" + c.pki.saKeyFile,
			"--service-cluster-ip-range=10.96.0.0/16",
			"--endpoint-reconciler-type=none",
			// no controller creates the default ServiceAccount, and no node
			// lifecycle controller removes the not-ready taint
			"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
			"--allow-privileged=true",
			"--profiling=false",
			"--v=1",
		}
		args = append(args, c.opts.APIServerArgs...)
		p, err := c.run("kube-apiserver", "kube-apiserver", args)
		if err != nil {
			return err
		}
		c.Server = "https://127.0.0.1:" + strconv.Itoa(port)
		c.Admin = c.restConfig(adminToken)
		c.Adapter = c.restConfig(adapterToken)
		err = c.waitHTTP(ctx, p, c.Server+"/readyz", adminToken, false)
		if err == nil {
			c.opts.Logf("kubetest: kube-apiserver on %s in %v", c.Server, time.Since(start).Round(time.Millisecond))
			break
		}
		p.stop(5 * time.Second)
		if attempt == 3 || !strings.Contains(p.tail(80), "address already in use") {
			return err
		}
	}
	var err error
	if c.Client, err = kubernetes.NewForConfig(c.Admin); err != nil {
		return fmt.Errorf("cannot make the admin client: %w", err)
	}
	if c.AdminKubeconfig, err = c.writeKubeconfig("admin", adminToken); err != nil {
		return err
	}
	if c.AdapterKubeconfig, err = c.writeKubeconfig("adapter", adapterToken); err != nil {
		return err
	}
	if c.schedulerKubeconfig, err = c.writeKubeconfig("scheduler", schedToken); err != nil {
		return err
	}
	return nil
}

func (c *Cluster) restConfig(token string) *rest.Config {
	return &rest.Config{
		Host:            c.Server,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.pki.caPEM},
		QPS:             c.opts.QPS,
		Burst:           c.opts.Burst,
		UserAgent:       "kubetest",
	}
}

func (c *Cluster) writeKubeconfig(name, token string) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubetest"] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: c.pki.caPEM}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: name}
	cfg.CurrentContext = name
	path := filepath.Join(c.Dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("cannot write %s: %w", path, err)
	}
	return path, nil
}

// waitHTTP polls url until it answers 200, the process exits or the start
// timeout passes. insecure skips the certificate check (a component's own
// self-signed serving certificate, on loopback).
func (c *Cluster) waitHTTP(ctx context.Context, p *proc, url, token string, insecure bool) error {
	tlsConf := &tls.Config{InsecureSkipVerify: insecure}
	if !insecure {
		pool, err := certPool(c.pki.caPEM)
		if err != nil {
			return err
		}
		tlsConf.RootCAs = pool
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConf}}
	defer hc.CloseIdleConnections()
	var last string
	err := Poll(ctx, c.opts.StartTimeout, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		if done, _ := p.exited(); done {
			return false, p.exitError()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		var body bytes.Buffer
		body.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return true, nil
		}
		last = fmt.Sprintf("%s: %s", resp.Status, lastLines(body.String(), 6))
		return false, nil
	})
	if err != nil {
		var pe *PollError
		if errors.As(err, &pe) {
			return fmt.Errorf("%s is not ready at %s after %v (last answer: %s); the end of %s:\n%s", p.name, url, c.opts.StartTimeout, last, p.logPath, p.tail(40))
		}
		return err
	}
	return nil
}

func (c *Cluster) startKWOK(ctx context.Context) error {
	cfg := fmt.Sprintf(`apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  cidr: 10.128.0.0/9
  nodeIP: 10.0.0.1
  manageAllNodes: false
  manageNodesWithAnnotationSelector: %s=fake
  nodeLeaseDurationSeconds: 0
  podPlayStageParallelism: %d
  nodePlayStageParallelism: %d
---
%s`, NodeAnnotation, c.opts.KWOKParallelism, c.opts.KWOKParallelism, kwokStages)
	path := filepath.Join(c.Dir, "kwok.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	kubeconfig, err := c.writeKubeconfig("kwok", c.Admin.BearerToken)
	if err != nil {
		return err
	}
	_, err = c.run("kwok", "kwok", []string{
		"--kubeconfig=" + kubeconfig,
		"--config=" + path,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + NodeAnnotation + "=fake",
		"--node-lease-duration-seconds=0",
	})
	// KWOK has no readiness endpoint here: AddNodes waits for its nodes to
	// turn Ready, which is what it does first.
	return err
}

func (c *Cluster) startControllerManager(ctx context.Context) error {
	start := time.Now()
	port, err := freePort()
	if err != nil {
		return err
	}
	p, err := c.run("kube-controller-manager", "kube-controller-manager", []string{
		"--kubeconfig=" + c.AdminKubeconfig,
		"--authentication-kubeconfig=" + c.AdminKubeconfig,
		"--authorization-kubeconfig=" + c.AdminKubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--leader-elect=false",
		"--controllers=" + strings.Join(c.opts.Controllers, ","),
		"--use-service-account-credentials=false",
		"--kube-api-qps=" + strconv.FormatFloat(float64(c.opts.QPS), 'f', -1, 32),
		"--kube-api-burst=" + strconv.Itoa(c.opts.Burst),
		"--concurrent-job-syncs=10",
		"--profiling=false",
		"--v=1",
	})
	if err != nil {
		return err
	}
	if err := c.waitHTTP(ctx, p, "https://127.0.0.1:"+strconv.Itoa(port)+"/healthz", "", true); err != nil {
		return err
	}
	c.opts.Logf("kubetest: kube-controller-manager (%s) in %v", strings.Join(c.opts.Controllers, ","), time.Since(start).Round(time.Millisecond))
	return nil
}

// Scheduler is a kube-scheduler the cluster runs.
type Scheduler struct {
	Name string // its profile's schedulerName
	p    *proc
}

// Stop stops the scheduler (the cluster's Close stops it too).
func (s *Scheduler) Stop() { s.p.stop(5 * time.Second) }

// LogPath is the scheduler's log file.
func (s *Scheduler) LogPath() string { return s.p.logPath }

// StartScheduler runs a kube-scheduler with one profile named name (pods
// with spec.schedulerName: name are its), and waits until it is healthy. It
// runs as SchedulerUser, as in a real cluster.
func (c *Cluster) StartScheduler(ctx context.Context, name string) (*Scheduler, error) {
	start := time.Now()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(c.Dir, "scheduler-"+name+".yaml")
	cfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: %g
  burst: %d
leaderElection:
  leaderElect: false
profiles:
- schedulerName: %q
`, c.schedulerKubeconfig, c.opts.QPS, c.opts.Burst, name)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, fmt.Errorf("cannot write %s: %w", cfgPath, err)
	}
	p, err := c.run("kube-scheduler-"+name, "kube-scheduler", []string{
		"--config=" + cfgPath,
		"--authentication-kubeconfig=" + c.schedulerKubeconfig,
		"--authorization-kubeconfig=" + c.schedulerKubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--profiling=false",
		"--v=1",
	})
	if err != nil {
		return nil, err
	}
	if err := c.waitHTTP(ctx, p, "https://127.0.0.1:"+strconv.Itoa(port)+"/healthz", "", true); err != nil {
		return nil, err
	}
	c.opts.Logf("kubetest: kube-scheduler %q in %v", name, time.Since(start).Round(time.Millisecond))
	return &Scheduler{Name: name, p: p}, nil
}

// Kubectl runs kubectl as the admin and returns its combined output.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.Bins, "kubectl"), append([]string{"--kubeconfig=" + c.AdminKubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return out, nil
}

// ApplyAdapterRBAC creates deploy/kubernetes's namespace, ServiceAccount and
// RBAC (00-namespace.yaml and rbac.yaml), so that Adapter has exactly the
// permissions a deployed fairsched-kube has.
func (c *Cluster) ApplyAdapterRBAC(ctx context.Context) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, "deploy", "kubernetes")
	return c.Apply(ctx, filepath.Join(dir, "00-namespace.yaml"), filepath.Join(dir, "rbac.yaml"))
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("cannot find a free loopback port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
