package check

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/bot"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

const chartDir = "../helm/approvalbot"

// helm is the helm binary: $HELM, as .ci/run sets it. Without it the chart
// tests are skipped, except under CI=true, where they must run.
func helm(t *testing.T) string {
	t.Helper()
	h := os.Getenv("HELM")
	if h == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("HELM is not set: CI must run the chart checks (.ci/run installs helm)")
		}
		t.Skip("HELM is not set (the path of a helm binary; .ci/run installs one)")
	}
	return h
}

// valuesFiles are the chart's renders CI checks: the defaults ("") and each
// values file in the chart's ci/ directory (one per Redis mode).
func valuesFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("want a values file per Redis mode in %s/ci, got %v (%v)", chartDir, files, err)
	}
	return append([]string{""}, files...)
}

// rendered is one helm template: its objects, decoded strictly.
type rendered struct {
	deployments []*appsv1.Deployment
	services    []*corev1.Service
	secrets     []*corev1.Secret
	pdbs        []*policyv1.PodDisruptionBudget
}

// render runs helm template with values (none: the defaults) and decodes
// every manifest strictly into its Kubernetes API type: an unknown or
// misspelled field, a duplicate key, a wrong type or an unknown kind fails.
func render(t *testing.T, values string, extra ...string) rendered {
	t.Helper()
	args := []string{"template", "rel", chartDir, "--namespace", "approvals"}
	if values != "" {
		args = append(args, "--values", values)
	}
	out, err := exec.Command(helm(t), append(args, extra...)...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("helm %v: %v\n%s", args, err, stderr)
	}
	var r rendered
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(out), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("manifest %d is not YAML: %v\n%s", i, err, doc)
		}
		var obj any
		switch tm.APIVersion + " " + tm.Kind {
		case "apps/v1 Deployment":
			d := &appsv1.Deployment{}
			r.deployments, obj = append(r.deployments, d), d
		case "v1 Service":
			s := &corev1.Service{}
			r.services, obj = append(r.services, s), s
		case "v1 Secret":
			s := &corev1.Secret{}
			r.secrets, obj = append(r.secrets, s), s
		case "policy/v1 PodDisruptionBudget":
			p := &policyv1.PodDisruptionBudget{}
			r.pdbs, obj = append(r.pdbs, p), p
		default:
			t.Fatalf("manifest %d is a %s %s, which this test does not know: add its type\n%s", i, tm.APIVersion, tm.Kind, doc)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Errorf("manifest %d (%s) does not decode strictly into %T: %v", i, tm.Kind, obj, err)
		}
	}
	return r
}

func stripComments(doc string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// Every render, with the defaults and with each Redis mode, decodes
// strictly and is a deployment of several non-root replicas with a
// read-only root, probes on /healthz and /readyz, a preStop sleep through
// the binary and a grace period covering the preStop, the drain and the
// shutdown; a Service and a PodDisruptionBudget that select its pods; its
// secrets from a Secret.
func TestChartRendersStrictly(t *testing.T) {
	for _, values := range valuesFiles(t) {
		t.Run(cmpName(values), func(t *testing.T) {
			r := render(t, values)
			if len(r.deployments) != 1 || len(r.services) != 1 {
				t.Fatalf("want one Deployment and one Service, got %d and %d", len(r.deployments), len(r.services))
			}
			d := r.deployments[0]
			pod := d.Spec.Template
			if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
				t.Errorf("replicas %v, want several", d.Spec.Replicas)
			}
			sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
			if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
				t.Errorf("the Deployment's selector %v does not select its pods %v (%v)", d.Spec.Selector, pod.Labels, err)
			}
			if !labels.SelectorFromSet(r.services[0].Spec.Selector).Matches(labels.Set(pod.Labels)) {
				t.Errorf("the Service's selector %v does not select the pods %v", r.services[0].Spec.Selector, pod.Labels)
			}
			for _, p := range r.pdbs {
				sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
				if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
					t.Errorf("the PodDisruptionBudget's selector %v does not select the pods %v (%v)", p.Spec.Selector, pod.Labels, err)
				}
				if p.Spec.MaxUnavailable == nil && p.Spec.MinAvailable == nil {
					t.Error("the PodDisruptionBudget bounds nothing")
				}
			}
			if values == "" && len(r.pdbs) != 1 {
				t.Errorf("the defaults render %d PodDisruptionBudgets, want 1", len(r.pdbs))
			}
			if len(pod.Spec.Containers) != 1 {
				t.Fatalf("%d containers, want 1", len(pod.Spec.Containers))
			}
			c := pod.Spec.Containers[0]
			checkProbes(t, c)
			checkSecurity(t, pod.Spec, c)
			checkSecretSource(t, r, c)
			checkShutdown(t, pod.Spec, c)
			checkConfigLoads(t, r, c)
		})
	}
}

func cmpName(values string) string {
	if values == "" {
		return "defaults"
	}
	return strings.TrimSuffix(filepath.Base(values), ".yaml")
}

func checkProbes(t *testing.T, c corev1.Container) {
	t.Helper()
	for name, p := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != name || p.HTTPGet.Port.String() != "http" {
			t.Errorf("probe for %s: %+v", name, p)
		}
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("ports %+v, want http on 8080 (LISTEN_ADDR)", c.Ports)
	}
}

func checkSecurity(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	psc, sc := pod.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("pod securityContext %+v: want non-root", psc)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("container securityContext %+v: want a read-only root, no privilege escalation, all capabilities dropped", sc)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod mounts a service account token it never uses")
	}
}

// checkSecretSource: the secrets come from a Secret, the chart's (rendered)
// or an existing one (not rendered).
func checkSecretSource(t *testing.T, r rendered, c corev1.Container) {
	t.Helper()
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil {
		t.Fatalf("envFrom %+v, want the Secret", c.EnvFrom)
	}
	name := c.EnvFrom[0].SecretRef.Name
	if len(r.secrets) > 1 || (len(r.secrets) == 1 && r.secrets[0].Name != name) {
		t.Errorf("the pods read the Secret %q; rendered %d Secrets", name, len(r.secrets))
	}
	for _, e := range c.Env {
		if strings.Contains(e.Name, "TOKEN") || strings.Contains(e.Name, "SECRET") || e.Name == "AUDIT_KEY" {
			t.Errorf("%s is a plain environment value; secrets belong in the Secret", e.Name)
		}
	}
}

// checkShutdown: the preStop hook runs the binary's sleep (no shell in the
// image), and the grace period covers it, the drain delay and the
// shutdown timeout.
func checkShutdown(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Exec == nil {
		t.Fatalf("no preStop exec hook: %+v", c.Lifecycle)
	}
	cmd := c.Lifecycle.PreStop.Exec.Command
	if len(cmd) != 3 || cmd[0] != "/approvalbot" || cmd[1] != "sleep" {
		t.Fatalf("preStop runs %v, want /approvalbot sleep <duration>", cmd)
	}
	preStop := duration(t, cmd[2])
	total := preStop + duration(t, env(c, "SHUTDOWN_DRAIN_DELAY")) + duration(t, env(c, "SHUTDOWN_TIMEOUT"))
	if pod.TerminationGracePeriodSeconds == nil || time.Duration(*pod.TerminationGracePeriodSeconds)*time.Second <= total {
		t.Errorf("terminationGracePeriodSeconds %v does not exceed preStop + SHUTDOWN_DRAIN_DELAY + SHUTDOWN_TIMEOUT = %s",
			pod.TerminationGracePeriodSeconds, total)
	}
}

// checkConfigLoads: the pod's environment, with the Secret's keys (fake
// ones for those only the operator knows) and $(VAR) references expanded as
// the kubelet does, is a configuration the bot accepts, on a real Redis
// (REQUIRE_REDIS) of the mode the values asked for.
func checkConfigLoads(t *testing.T, r rendered, c corev1.Container) {
	t.Helper()
	vars := map[string]string{}
	for _, s := range r.secrets {
		for k, v := range s.StringData {
			vars[k] = v
		}
	}
	for k, v := range map[string]string{
		"SLACK_BOT_TOKEN": "xoxb-1-2-3", "SLACK_SIGNING_SECRET": "0123456789abcdef", "INTAKE_TOKENS": "planner:0123456789abcdef0123",
		"CALLBACK_SECRET": "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", "AUDIT_KEY": "0123456789abcdef0123456789abcdef",
		"REDIS_PASSWORD": "s3cret", "REDIS_URL": "redis://from-the-secret:6379/0",
	} {
		vars[k] = v
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			t.Errorf("%s comes from %+v; this test expands only values", e.Name, e.ValueFrom)
			continue
		}
		vars[e.Name] = kubeRef.ReplaceAllStringFunc(e.Value, func(ref string) string {
			if v, ok := vars[ref[2:len(ref)-1]]; ok {
				return v
			}
			return ref // the kubelet leaves an undefined reference as written
		})
	}
	if vars["REQUIRE_REDIS"] != "true" {
		t.Errorf("REQUIRE_REDIS=%q, want true", vars["REQUIRE_REDIS"])
	}
	cfg, err := loadConfig(vars)
	if err != nil {
		t.Fatalf("the bot refuses the chart's configuration: %v", err)
	}
	if !cfg.RequireRedis || cfg.EmbeddedRedis() || cfg.ListenAddr != ":8080" {
		t.Errorf("config: require_redis=%v embedded=%v listen=%q", cfg.RequireRedis, cfg.EmbeddedRedis(), cfg.ListenAddr)
	}
	if strings.Contains(cfg.RedisURL, "$(") {
		t.Errorf("REDIS_URL %q still holds a reference", cfg.RedisURL)
	}
}

// kubeRef is a $(VAR) reference in a container's env value.
var kubeRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// loadConfig is bot.LoadConfig with exactly vars as the environment.
func loadConfig(vars map[string]string) (bot.Config, error) {
	saved := os.Environ()
	os.Clearenv()
	defer func() {
		os.Clearenv()
		for _, kv := range saved {
			k, v, _ := strings.Cut(kv, "=")
			_ = os.Setenv(k, v)
		}
	}()
	for k, v := range vars {
		_ = os.Setenv(k, v)
	}
	return bot.LoadConfig()
}

func env(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func duration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%q is not a duration: %v", s, err)
	}
	return d
}

// The REDIS_URL each mode renders, exactly: the forms of
// docs/configuration.md, the password left to the kubelet.
func TestChartRedisURLs(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "redis://redis-master:6379/0"},
		{[]string{"--set", "redis.tls=true,redis.db=3,redis.username=bot,redis.passwordFromSecret=true"}, "rediss://bot:$(REDIS_PASSWORD)@redis-master:6379/3"},
		{[]string{"--values", chartDir + "/ci/sentinel-values.yaml"},
			"rediss+sentinel://:$(REDIS_PASSWORD)@sentinel-0.sentinel:26379,sentinel-1.sentinel:26379,sentinel-2.sentinel:26379/approvals/2"},
		{[]string{"--values", chartDir + "/ci/cluster-values.yaml"},
			"redis+cluster://approvalbot:$(REDIS_PASSWORD)@redis-cluster-0.redis-cluster:6379,redis-cluster-1.redis-cluster:6379,redis-cluster-2.redis-cluster:6379/?pool_size=20"},
		{[]string{"--values", chartDir + "/ci/secret-url-values.yaml"}, ""},
	} {
		r := render(t, "", c.args...)
		if got := env(r.deployments[0].Spec.Template.Spec.Containers[0], "REDIS_URL"); got != c.want {
			t.Errorf("%v: REDIS_URL %q, want %q", c.args, got, c.want)
		}
	}
}

// The admin listener is off by default; admin.enabled binds it to the
// pod's loopback, with no container port, and the bot accepts it.
func TestChartAdminListener(t *testing.T) {
	c := render(t, "").deployments[0].Spec.Template.Spec.Containers[0]
	if got := env(c, "ADMIN_ADDR"); got != "" {
		t.Errorf("ADMIN_ADDR %q by default, want it unset (off)", got)
	}
	r := render(t, "", "--set", "admin.enabled=true,admin.port=6061")
	c = r.deployments[0].Spec.Template.Spec.Containers[0]
	if got := env(c, "ADMIN_ADDR"); got != "127.0.0.1:6061" {
		t.Errorf("admin.enabled: ADMIN_ADDR %q, want 127.0.0.1:6061 (loopback only)", got)
	}
	for _, p := range c.Ports {
		if p.ContainerPort == 6061 {
			t.Errorf("admin.enabled: the container exposes the admin port: %+v", c.Ports)
		}
	}
	for _, s := range r.services {
		for _, p := range s.Spec.Ports {
			if p.TargetPort.IntValue() == 6061 || p.Port == 6061 {
				t.Errorf("admin.enabled: a Service routes to the admin port: %+v", s.Spec.Ports)
			}
		}
	}
	checkConfigLoads(t, r, c)
}

// Values that cannot make a working deployment fail the render, saying why.
func TestChartRefusesBadValues(t *testing.T) {
	h := helm(t)
	for args, want := range map[string]string{
		"redis.mode=replica":                        "redis.mode must be standalone, sentinel, cluster or secret",
		"redis.addresses={a:6379,b:6379}":           "standalone takes exactly one address",
		"redis.mode=cluster,redis.db=1":             "cluster has only database 0",
		"redis.mode=sentinel,redis.masterName=":     "sentinel needs redis.masterName",
		"config.REDIS_URL=redis://elsewhere:6379/0": "config.REDIS_URL is set by the chart",
		"config.REQUIRE_REDIS=false":                "config.REQUIRE_REDIS is set by the chart",
		"config.ADMIN_ADDR=0.0.0.0:6060":            "config.ADMIN_ADDR is set by the chart",
	} {
		out, err := exec.Command(h, "template", "rel", chartDir, "--set", args).CombinedOutput()
		if err == nil || !bytes.Contains(out, []byte(want)) {
			t.Errorf("--set %s: %v, %s; want it refused with %q", args, err, lastLine(out), want)
		}
	}
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return fmt.Sprint(lines[len(lines)-1])
}
