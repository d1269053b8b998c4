// Package helm_test checks deploy/helm/hookd without a cluster: helm lint
// and helm template (Helm v4 as a library) for every example values file,
// and every rendered object decoded strictly into its Kubernetes API type.
//
// The schemas are the Go types of k8s.io/api (through client-go's
// scheme, whose strict decoder refuses unknown and duplicate fields and
// wrong types), not kubeconform's JSON schemas: those are downloaded from
// GitHub, which this machine and CI cannot reach, while the Go types come
// through the module proxy, pinned in go.sum at the version Helm uses.
// The ServiceMonitor, a CRD of the Prometheus Operator, is decoded into a
// struct of the v1 fields the chart writes (serviceMonitor below);
// schema_test.go validates it against the CRD's own schema.
package helm_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

const chartDir = "hookd"

// examples returns the example values files.
func examples(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("examples/*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("example values files: %v (%d found)", err, len(files))
	}
	return files
}

func readValues(t *testing.T, file string) map[string]any {
	t.Helper()
	vals, err := common.ReadValuesFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

// TestLint is `helm lint --strict` with each example values file: a
// warning fails too.
func TestLint(t *testing.T) {
	for _, file := range examples(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			lint := action.NewLint()
			lint.Strict = true
			lint.Namespace = "hookd"
			res := lint.Run([]string{chartDir}, readValues(t, file))
			for _, m := range res.Messages {
				t.Logf("lint: %s", m)
			}
			for _, err := range res.Errors {
				t.Errorf("lint: %v", err)
			}
		})
	}
}

// render is `helm template hookd deploy/helm/hookd -n hookd -f file`: the
// chart's manifests (hooks included), by template file.
func render(t *testing.T, vals map[string]any) (map[string]string, error) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := util.ToRenderValues(ch, vals, common.ReleaseOptions{Name: "hookd", Namespace: "hookd", Revision: 1, IsInstall: true}, common.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, rv)
}

// decoder decodes strictly: an unknown field, a duplicate field or a
// wrong type is an error.
var decoder = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

// objects renders vals and decodes every manifest into its API type
// (*appsv1.Deployment, …, *serviceMonitor).
func objects(t *testing.T, vals map[string]any) []any {
	t.Helper()
	files, err := render(t, vals)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	var all strings.Builder
	for name, text := range files {
		if strings.HasSuffix(name, "NOTES.txt") || strings.TrimSpace(text) == "" {
			continue
		}
		fmt.Fprintf(&all, "---\n# Source: %s\n%s\n", name, text)
	}
	var out []any
	for _, doc := range releaseutil.SplitManifests(all.String()) {
		if isComment(doc) {
			continue
		}
		out = append(out, decode(t, doc))
	}
	return out
}

// isComment reports whether a manifest holds nothing but comments.
func isComment(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if l := strings.TrimSpace(line); l != "" && l != "---" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// decode decodes one manifest strictly and checks its name.
func decode(t *testing.T, doc string) any {
	t.Helper()
	var meta struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, doc)
	}
	if errs := validation.IsDNS1123Subdomain(meta.Metadata.Name); len(errs) > 0 {
		t.Errorf("%s %q: %v", meta.Kind, meta.Metadata.Name, errs)
	}
	if meta.Kind == "ServiceMonitor" {
		return decodeServiceMonitor(t, doc)
	}
	obj, _, err := decoder.Decode([]byte(doc), nil, nil)
	if err != nil {
		t.Fatalf("%s %s does not match the Kubernetes API: %v\n%s", meta.Kind, meta.Metadata.Name, err, doc)
	}
	return obj
}

// serviceMonitor is the part of monitoring.coreos.com/v1 ServiceMonitor
// the chart writes (field names from the Prometheus Operator's API
// reference); decoded with unknown fields refused, like the built-in kinds.
type serviceMonitor struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval"`
		} `json:"endpoints"`
	} `json:"spec"`
}

func decodeServiceMonitor(t *testing.T, doc string) *serviceMonitor {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var sm serviceMonitor
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sm); err != nil {
		t.Fatalf("ServiceMonitor: %v\n%s", err, doc)
	}
	if sm.APIVersion != "monitoring.coreos.com/v1" || len(sm.Spec.Endpoints) == 0 || len(sm.Spec.Selector.MatchLabels) == 0 {
		t.Fatalf("ServiceMonitor %+v", sm)
	}
	return &sm
}

// rendered is one example's objects by kind.
type rendered struct {
	deployments map[string]*appsv1.Deployment // by component label
	jobs        []*batchv1.Job
	services    []*corev1.Service
	pvcs        []*corev1.PersistentVolumeClaim
	secrets     []*corev1.Secret
	pdbs        []*policyv1.PodDisruptionBudget
	hpas        []*autoscalingv2.HorizontalPodAutoscaler
	monitors    []*serviceMonitor
	accounts    []*corev1.ServiceAccount
}

func sortKinds(t *testing.T, objs []any) *rendered {
	t.Helper()
	r := &rendered{deployments: map[string]*appsv1.Deployment{}}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			r.deployments[o.Labels["app.kubernetes.io/component"]] = o
		case *batchv1.Job:
			r.jobs = append(r.jobs, o)
		case *corev1.Service:
			r.services = append(r.services, o)
		case *corev1.PersistentVolumeClaim:
			r.pvcs = append(r.pvcs, o)
		case *corev1.Secret:
			r.secrets = append(r.secrets, o)
		case *policyv1.PodDisruptionBudget:
			r.pdbs = append(r.pdbs, o)
		case *autoscalingv2.HorizontalPodAutoscaler:
			r.hpas = append(r.hpas, o)
		case *serviceMonitor:
			r.monitors = append(r.monitors, o)
		case *corev1.ServiceAccount:
			r.accounts = append(r.accounts, o)
		default:
			t.Errorf("unexpected object %T", o)
		}
	}
	return r
}

// TestTemplate renders each example, decodes every object strictly, and
// checks what the chart promises: the roles, the Secrets, the probes, the
// security context, the migration before the pods, and the mode's shape.
func TestTemplate(t *testing.T) {
	for _, file := range examples(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			vals := readValues(t, file)
			r := sortKinds(t, objects(t, vals))
			mode := vals["mode"]
			for component, d := range r.deployments {
				checkPod(t, component, d.Spec.Template.Spec)
				sel := d.Spec.Selector.MatchLabels
				for k, v := range sel {
					if d.Spec.Template.Labels[k] != v {
						t.Errorf("deployment %s: selector %s=%s does not match its pods", d.Name, k, v)
					}
				}
				if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--role="+component) {
					t.Errorf("deployment %s runs %v, want --role=%s", d.Name, d.Spec.Template.Spec.Containers[0].Args, component)
				}
			}
			for _, j := range r.jobs {
				checkPod(t, "migrate", j.Spec.Template.Spec)
			}
			for _, s := range r.services {
				if !selectsAny(s.Spec.Selector, r.deployments) {
					t.Errorf("service %s selects no pods (%v)", s.Name, s.Spec.Selector)
				}
			}
			for _, p := range r.pdbs {
				if !selectsAny(p.Spec.Selector.MatchLabels, r.deployments) {
					t.Errorf("budget %s selects no pods", p.Name)
				}
			}
			for _, h := range r.hpas {
				ref := h.Spec.ScaleTargetRef
				found := false
				for _, d := range r.deployments {
					found = found || (ref.Kind == "Deployment" && ref.Name == d.Name)
				}
				if !found {
					t.Errorf("autoscaler %s scales %s %s, which the chart does not make", h.Name, ref.Kind, ref.Name)
				}
			}
			switch mode {
			case "postgres":
				checkPostgres(t, r, vals)
			case "sqlite":
				checkSQLite(t, r)
			default:
				t.Fatalf("example %s: mode %v", file, mode)
			}
		})
	}
}

// checkPod checks a hookd pod: non-root, read-only root filesystem, no
// privileges, the master key from a Secret file (never the environment),
// the database from a Secret in postgres mode, probes on /healthz and
// /readyz for the server, and resources.
func checkPod(t *testing.T, name string, spec corev1.PodSpec) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("%s: pod may run as root: %+v", name, psc)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s: mounts a service account token hookd never uses", name)
	}
	keyVolume := ""
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			keyVolume = v.Name
		}
	}
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("%s/%s: security context %+v", name, c.Name, sc)
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s/%s: no CPU request or memory limit", name, c.Name)
		}
		env := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			env[e.Name] = e
		}
		if _, ok := env["HOOKD_MASTER_KEY"]; ok {
			t.Errorf("%s/%s: the master key is in the environment", name, c.Name)
		}
		keyFile := env["HOOKD_MASTER_KEY_FILE"].Value
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || (m.Name == keyVolume && strings.HasPrefix(keyFile, m.MountPath+"/") && m.ReadOnly)
		}
		if !mounted {
			t.Errorf("%s/%s: HOOKD_MASTER_KEY_FILE %q is not in a read-only Secret volume", name, c.Name, keyFile)
		}
		if db := env["HOOKD_DATABASE"]; db.Value == "" && (db.ValueFrom == nil || db.ValueFrom.SecretKeyRef == nil) {
			t.Errorf("%s/%s: HOOKD_DATABASE is neither a path nor from a Secret: %+v", name, c.Name, db)
		} else if strings.HasPrefix(db.Value, "postgres") {
			t.Errorf("%s/%s: the database URL (and its password) is written into the pod spec", name, c.Name)
		}
	}
	if name == "migrate" {
		return
	}
	c := spec.Containers[0]
	ports := map[string]bool{}
	for _, p := range c.Ports {
		ports[p.Name] = true
	}
	for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || !ports[probe.HTTPGet.Port.StrVal] {
			t.Errorf("%s: want a probe on %s at a port of the container, got %+v", name, path, probe)
		}
	}
}

func selectsAny(sel map[string]string, ds map[string]*appsv1.Deployment) bool {
	for _, d := range ds {
		all := len(sel) > 0
		for k, v := range sel {
			all = all && d.Spec.Template.Labels[k] == v
		}
		if all {
			return true
		}
	}
	return false
}

func checkPostgres(t *testing.T, r *rendered, vals map[string]any) {
	t.Helper()
	if len(r.deployments) != 2 || r.deployments["api"] == nil || r.deployments["worker"] == nil {
		t.Fatalf("postgres mode makes deployments %v, want api and worker", keys(r.deployments))
	}
	if len(r.jobs) != 1 || !strings.Contains(r.jobs[0].Annotations["helm.sh/hook"], "pre-install") || !strings.Contains(r.jobs[0].Annotations["helm.sh/hook"], "pre-upgrade") ||
		!slices.Equal(r.jobs[0].Spec.Template.Spec.Containers[0].Args, []string{"migrate"}) {
		t.Errorf("postgres mode: want one migration Job (hookd migrate) as a pre-install and pre-upgrade hook, got %d", len(r.jobs))
	}
	for _, s := range r.secrets { // the chart's own Secrets must exist before the Job
		if !strings.Contains(s.Annotations["helm.sh/hook"], "pre-install") || s.Annotations["helm.sh/hook-weight"] >= r.jobs[0].Annotations["helm.sh/hook-weight"] && s.Annotations["helm.sh/hook-weight"][0] != '-' {
			t.Errorf("secret %s is not created before the migration Job: %v", s.Name, s.Annotations)
		}
	}
	if len(r.pvcs) != 0 {
		t.Errorf("postgres mode makes %d volume claims", len(r.pvcs))
	}
	if w := r.deployments["worker"].Spec.Template.Spec.Containers[0]; slices.ContainsFunc(w.Args, func(a string) bool { return strings.HasPrefix(a, "--addr") }) {
		t.Errorf("the worker listens for the API: %v", w.Args)
	}
	autoscaled := 0
	for _, c := range []string{"api", "worker"} {
		a := vals[c].(map[string]any)["autoscaling"]
		on := a != nil && a.(map[string]any)["enabled"] == true
		if on {
			autoscaled++
			if r.deployments[c].Spec.Replicas != nil {
				t.Errorf("%s is autoscaled but its Deployment also sets replicas", c)
			}
		}
	}
	if len(r.hpas) != autoscaled {
		t.Errorf("%d autoscalers, want %d", len(r.hpas), autoscaled)
	}
	if len(r.pdbs) != 2 {
		t.Errorf("%d disruption budgets, want api's and worker's", len(r.pdbs))
	}
	sm := vals["serviceMonitor"]
	if want := sm != nil && sm.(map[string]any)["enabled"] == true; want != (len(r.monitors) == 1) {
		t.Errorf("%d ServiceMonitors, want one: %v", len(r.monitors), want)
	}
	for _, m := range r.monitors {
		found := false
		for _, s := range r.services {
			match := true
			for k, v := range m.Spec.Selector.MatchLabels {
				match = match && s.Labels[k] == v
			}
			found = found || (match && slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == m.Spec.Endpoints[0].Port }))
		}
		if !found {
			t.Errorf("the ServiceMonitor selects no Service with port %q", m.Spec.Endpoints[0].Port)
		}
	}
}

func checkSQLite(t *testing.T, r *rendered) {
	t.Helper()
	d := r.deployments["all"]
	if len(r.deployments) != 1 || d == nil {
		t.Fatalf("sqlite mode makes deployments %v, want one (all)", keys(r.deployments))
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("sqlite mode: replicas %v, strategy %q; want 1 and Recreate (one process on the file)", d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	spec := d.Spec.Template.Spec
	if len(spec.InitContainers) != 1 || !slices.Equal(spec.InitContainers[0].Args, []string{"migrate"}) {
		t.Errorf("sqlite mode: want an init container running hookd migrate, got %+v", spec.InitContainers)
	}
	if len(r.pvcs) != 1 || !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool {
		return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == r.pvcs[0].Name
	}) {
		t.Errorf("sqlite mode: want the pod on the chart's volume claim")
	}
	if len(r.jobs) != 0 || len(r.pdbs) != 0 || len(r.hpas) != 0 {
		t.Errorf("sqlite mode makes %d jobs, %d budgets, %d autoscalers; want none", len(r.jobs), len(r.pdbs), len(r.hpas))
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestBadValues: values the chart cannot run with are refused when
// rendering, with a message that says what to set (the values schema, or
// the chart's own checks).
func TestBadValues(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{"mode": "postgres", "masterKey": map[string]any{"existingSecret": "k"}, "database": map[string]any{"existingSecret": "db"}}
	}
	cases := []struct {
		name string
		edit func(v map[string]any)
		want string
	}{
		{"the defaults", func(v map[string]any) { delete(v, "masterKey"); delete(v, "database") }, ".existingSecret (a Secret whose key"},
		{"no master key", func(v map[string]any) { delete(v, "masterKey") }, "masterKey: set masterKey.existingSecret"},
		{"sqlite without a master key", func(v map[string]any) { delete(v, "masterKey"); v["mode"] = "sqlite" }, "masterKey: set masterKey.existingSecret"},
		{"postgres without a database", func(v map[string]any) { delete(v, "database") }, "database: mode postgres needs database.existingSecret"},
		{"an unknown mode", func(v map[string]any) { v["mode"] = "mysql" }, "mode"},
		{"an unknown value", func(v map[string]any) { v["replicas"] = 3 }, "replicas"},
		{"a key that is not 32 bytes", func(v map[string]any) { v["masterKey"] = map[string]any{"value": "c2hvcnQ="} }, "masterKey"},
		{"a URL that is not PostgreSQL's", func(v map[string]any) { v["database"] = map[string]any{"url": "mysql://x"} }, "database"},
	}
	for _, c := range cases {
		v := base()
		c.edit(v)
		_, err := render(t, v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
	if _, err := render(t, base()); err != nil {
		t.Errorf("the base values: %v", err)
	}
}

// TestExamplesDocumented: every example values file is named in
// docs/deploy.md.
func TestExamplesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range examples(t) {
		if !strings.Contains(string(doc), "deploy/helm/"+file) {
			t.Errorf("docs/deploy.md does not mention deploy/helm/%s", file)
		}
	}
}
