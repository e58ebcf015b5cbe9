package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/copse-dev/copse/e2e/cluster"
)

// The JobSet controller is the restart and completion reference. It is built
// from the tools module hack/tools/jobset, whose go.mod pins its version.
const (
	jobSetModule = "sigs.k8s.io/jobset"
	// jobSetToolsDir is the tools module, relative to the repository root.
	jobSetToolsDir = "hack/tools/jobset"
	// jobSetCRDPath is the JobSet CRD inside the module.
	jobSetCRDPath = "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"
	// jobSetBinary is the name of the controller binary in the cache.
	jobSetBinary = "jobset-controller"
	// LabelJobSetRestartAttempt is the label the JobSet controller puts on
	// its Jobs and pods: the JobSet's restart count when they were created.
	LabelJobSetRestartAttempt = "jobset.sigs.k8s.io/restart-attempt"
	// ConditionJobSetCompleted is the JobSet condition of success.
	ConditionJobSetCompleted = "Completed"
)

// JobSetGVR is the JobSet resource.
var JobSetGVR = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}

// JobSetToolsModule describes the pinned JobSet module.
type JobSetToolsModule struct {
	// Dir is hack/tools/jobset.
	Dir string
	// Version is the required version of sigs.k8s.io/jobset.
	Version string
	// key names the cache entry: jobset-<version>-<hash of go.mod, go.sum>.
	key string
}

// FindJobSetToolsModule reads hack/tools/jobset under the repository root.
func FindJobSetToolsModule() (JobSetToolsModule, error) {
	root, err := cluster.RepoRoot()
	if err != nil {
		return JobSetToolsModule{}, err
	}
	dir := filepath.Join(root, jobSetToolsDir)
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return JobSetToolsModule{}, fmt.Errorf("read JobSet tools module: %w", err)
	}
	gosum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		return JobSetToolsModule{}, fmt.Errorf("read JobSet tools module: %w", err)
	}
	version := requiredVersion(gomod, jobSetModule)
	if version == "" {
		return JobSetToolsModule{}, fmt.Errorf("%s/go.mod requires no %s", jobSetToolsDir, jobSetModule)
	}
	h := sha256.New()
	h.Write(gomod)
	h.Write([]byte{0})
	h.Write(gosum)
	return JobSetToolsModule{Dir: dir, Version: version,
		key: fmt.Sprintf("jobset-%s-%s", version, hex.EncodeToString(h.Sum(nil))[:12])}, nil
}

// requiredVersion finds module's version in a go.mod's require directives.
func requiredVersion(gomod []byte, module string) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "require "))
		if len(fields) >= 2 && fields[0] == module {
			return fields[1]
		}
	}
	return ""
}

// EnsureBinary returns the JobSet controller binary, building it into the
// copse cache (<cache>/bin/jobset-<version>-<hash>/jobset-controller, next
// to the control-plane binaries) on first use: about 2 minutes on 2 cores.
func (m JobSetToolsModule) EnsureBinary(ctx context.Context, progress io.Writer) (string, error) {
	cache, err := cacheDir()
	if err != nil {
		return "", err
	}
	binRoot := filepath.Join(cache, "bin")
	final := filepath.Join(binRoot, m.key)
	path := filepath.Join(final, jobSetBinary)
	if isExecutable(path) {
		return path, nil
	}
	if err := os.MkdirAll(binRoot, 0o755); err != nil {
		return "", fmt.Errorf("create binary cache: %w", err)
	}
	unlock, err := lockFile(ctx, filepath.Join(binRoot, m.key+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if isExecutable(path) {
		return path, nil
	}
	fmt.Fprintf(progress, "building the JobSet controller %s (first run only, ~2 min)...\n", m.Version)
	start := time.Now()
	tmp, err := os.MkdirTemp(binRoot, "."+m.key+".tmp-")
	if err != nil {
		return "", fmt.Errorf("create build dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	out, err := m.goCommand(ctx, "build", "-o", filepath.Join(tmp, jobSetBinary), jobSetModule)
	if err != nil {
		return "", fmt.Errorf("build the JobSet controller: %w\n%s", err, out)
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", fmt.Errorf("install the JobSet controller: %w", err)
	}
	fmt.Fprintf(progress, "built the JobSet controller in %s\n", time.Since(start).Round(time.Second))
	return path, nil
}

// CRD reads the JobSet CRD from the module, downloading the module into the
// Go module cache if needed (`go mod download -json`).
func (m JobSetToolsModule) CRD(ctx context.Context) (*apiextensionsv1.CustomResourceDefinition, error) {
	out, err := m.goCommand(ctx, "mod", "download", "-json", jobSetModule)
	if err != nil {
		return nil, fmt.Errorf("locate %s: %w\n%s", jobSetModule, err, out)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, fmt.Errorf("locate %s: %w", jobSetModule, err)
	}
	if info.Dir == "" {
		return nil, fmt.Errorf("locate %s: %s", jobSetModule, info.Error)
	}
	data, err := os.ReadFile(filepath.Join(info.Dir, jobSetCRDPath))
	if err != nil {
		return nil, fmt.Errorf("read the JobSet CRD: %w", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return nil, fmt.Errorf("decode the JobSet CRD: %w", err)
	}
	return crd, nil
}

// goCommand runs the go command in the tools module, outside any workspace.
func (m JobSetToolsModule) goCommand(ctx context.Context, args ...string) ([]byte, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, goTool, args...)
	cmd.Dir = m.Dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return append(stdout.Bytes(), stderr.Bytes()...), fmt.Errorf("go %s (in %s): %w", strings.Join(args, " "), m.Dir, err)
	}
	return stdout.Bytes(), nil
}

func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir() && info.Mode().Perm()&0o100 != 0
}

// cacheDir is $COPSE_CACHE_DIR or <user cache dir>/copse, as for the
// control-plane binaries.
func cacheDir() (string, error) {
	if dir := os.Getenv(cluster.EnvCacheDir); dir != "" {
		return filepath.Abs(dir)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locate user cache directory (set %s): %w", cluster.EnvCacheDir, err)
	}
	return filepath.Join(base, "copse"), nil
}

// lockFile takes an exclusive flock, so that two runs do not build the same
// binary at once.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); _ = f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("wait for lock %s: %w", path, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// InstallCRD creates or updates crd and waits until it is served.
func InstallCRD(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) error {
	err := c.Create(ctx, crd.DeepCopy())
	if apierrors.IsAlreadyExists(err) {
		existing := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, existing); err != nil {
			return fmt.Errorf("get CRD %s: %w", crd.Name, err)
		}
		existing.Spec = crd.Spec
		err = c.Update(ctx, existing)
	}
	if err != nil {
		return fmt.Errorf("install CRD %s: %w", crd.Name, err)
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
			return false, err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// JobSetController is a JobSet controller process run against the cluster.
type JobSetController struct {
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	logPath string
}

// StartJobSetController runs binary against the cluster of kubeconfig with
// the given client QPS and burst, leader election, metrics and certificate
// management off, and its (unregistered) webhook server on a self-signed
// certificate in dir. It returns once /readyz answers.
func StartJobSetController(ctx context.Context, binary, kubeconfig, dir, logPath string, qps float32, burst int) (*JobSetController, error) {
	certDir := filepath.Join(dir, "certs")
	if err := writeSelfSignedCertificate(certDir); err != nil {
		return nil, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	webhookPort, healthPort := ports[0], ports[1]
	health := net.JoinHostPort("127.0.0.1", strconv.Itoa(healthPort))
	config := fmt.Sprintf(`apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
health:
  healthProbeBindAddress: %q
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %q
internalCertManagement:
  enable: false
clientConnection:
  qps: %g
  burst: %d
`, health, webhookPort, certDir, qps, burst)
	configPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		return nil, fmt.Errorf("write JobSet controller configuration: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open JobSet controller log: %w", err)
	}
	cmd := exec.Command(binary, "--config", configPath, "--kubeconfig", kubeconfig, "--zap-devel=false", "--zap-log-level=info")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start JobSet controller: %w", err)
	}
	j := &JobSetController{cmd: cmd, done: make(chan struct{}), logPath: logPath}
	go func() {
		j.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(j.done)
	}()
	url := "http://" + health + "/readyz"
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-j.done:
			return false, fmt.Errorf("exited: %v", j.waitErr)
		default:
		}
		resp, err := http.Get(url)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		_ = j.Stop()
		return nil, fmt.Errorf("JobSet controller not ready: %w; log: %s", err, logPath)
	}
	return j, nil
}

// PID is the controller's process id, or 0 once it has exited.
func (j *JobSetController) PID() int {
	select {
	case <-j.done:
		return 0
	default:
		return j.cmd.Process.Pid
	}
}

// CheckHealthy reports a controller that has exited.
func (j *JobSetController) CheckHealthy() error {
	select {
	case <-j.done:
		return fmt.Errorf("the JobSet controller exited (%v); log: %s", j.waitErr, j.logPath)
	default:
		return nil
	}
}

// Stop sends SIGTERM, and SIGKILL after 20 seconds.
func (j *JobSetController) Stop() error {
	select {
	case <-j.done:
		return nil
	default:
	}
	_ = syscall.Kill(-j.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-j.done:
		return nil
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-j.cmd.Process.Pid, syscall.SIGKILL)
		<-j.done
		return fmt.Errorf("the JobSet controller did not stop within 20s of SIGTERM and was killed")
	}
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// writeSelfSignedCertificate writes tls.crt and tls.key for 127.0.0.1 into
// dir. Nothing calls the JobSet webhooks (they are not registered); the
// controller only refuses to start without a serving certificate.
func writeSelfSignedCertificate(dir string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "jobset-webhook"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}

// NewJobSet is a JobSet of one replicated Job of n pods of podSpec
// (restartPolicy Never, annotated with podAnnotations): parallelism =
// completions = n, backoffLimit 0, so that one failed pod fails the Job, and
// failurePolicy maxRestarts with restart strategy Recreate. JobSet's
// defaulting webhook does not run here, so its defaults are applied by
// ApplyJobSetDefaults.
func NewJobSet(namespace, name string, n int32, podSpec corev1.PodSpec, podAnnotations map[string]string, maxRestarts int32) (*unstructured.Unstructured, error) {
	podSpec.RestartPolicy = corev1.RestartPolicyNever
	job := batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
		Parallelism:  ptr.To(n),
		Completions:  ptr.To(n),
		BackoffLimit: ptr.To[int32](0),
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: podAnnotations},
			Spec:       podSpec,
		},
	}}
	jobTemplate, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&job)
	if err != nil {
		return nil, fmt.Errorf("JobSet %s: %w", name, err)
	}
	js := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": JobSetGVR.GroupVersion().String(),
		"kind":       "JobSet",
		"metadata":   map[string]any{"namespace": namespace, "name": name},
		"spec": map[string]any{
			"failurePolicy": map[string]any{"maxRestarts": int64(maxRestarts), "restartStrategy": "Recreate"},
			"replicatedJobs": []any{map[string]any{
				"name":     "worker",
				"replicas": int64(1),
				"template": jobTemplate,
			}},
		},
	}}
	ApplyJobSetDefaults(js)
	return js, nil
}

// ApplyJobSetDefaults sets what JobSet v0.12.0's defaulting webhook
// (pkg/webhooks/jobset_webhook.go, Default) would: successPolicy All,
// startupPolicy AnyOrder, Indexed completion and restartPolicy OnFailure for
// every replicated Job's template where unset, DNS hostnames and
// publishNotReadyAddresses on, and names for unnamed failure-policy rules.
func ApplyJobSetDefaults(js *unstructured.Unstructured) {
	obj := js.Object
	setIfAbsent(obj, map[string]any{"operator": "All"}, "spec", "successPolicy")
	setIfAbsent(obj, map[string]any{"startupPolicyOrder": "AnyOrder"}, "spec", "startupPolicy")
	setIfAbsent(obj, true, "spec", "network", "enableDNSHostnames")
	setIfAbsent(obj, true, "spec", "network", "publishNotReadyAddresses")
	rjobs, _, _ := unstructured.NestedSlice(obj, "spec", "replicatedJobs")
	for _, r := range rjobs {
		if rjob, ok := r.(map[string]any); ok {
			setIfAbsent(rjob, "Indexed", "template", "spec", "completionMode")
			setIfAbsent(rjob, string(corev1.RestartPolicyOnFailure), "template", "spec", "template", "spec", "restartPolicy")
		}
	}
	_ = unstructured.SetNestedSlice(obj, rjobs, "spec", "replicatedJobs")
	rules, found, _ := unstructured.NestedSlice(obj, "spec", "failurePolicy", "rules")
	if found {
		for i, r := range rules {
			if rule, ok := r.(map[string]any); ok && rule["name"] == nil {
				rule["name"] = fmt.Sprintf("failurePolicyRule%d", i)
			}
		}
		_ = unstructured.SetNestedSlice(obj, rules, "spec", "failurePolicy", "rules")
	}
}

func setIfAbsent(obj map[string]any, value any, fields ...string) {
	if v, found, _ := unstructured.NestedFieldNoCopy(obj, fields...); found && v != nil && v != "" {
		return
	}
	_ = unstructured.SetNestedField(obj, value, fields...)
}
