package helm_test

// The chart's objects validated against the Kubernetes OpenAPI v3 schemas,
// as kubeconform -strict would: the schemas come from the module
// k8s.io/kubernetes (its api/openapi-spec/v3, the API server's own
// published schemas) fetched through the Go module proxy and checked
// against the checksum database, pinned below at the version of the
// k8s.io/api the strict decoder uses. kubeconform's own schemas are
// downloaded from GitHub, which CI cannot reach; these are the same
// schemas before kubeconform's conversion. The ServiceMonitor, a CRD, is
// validated against the schema in the Prometheus Operator's CRD, from its
// module the same way.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// kubernetesModule is the module whose api/openapi-spec/v3 holds the
// schemas, and its go.sum hash: a different zip fails the download.
const (
	kubernetesModule = "k8s.io/kubernetes@v1.37.2"
	kubernetesSum    = "h1:A2VDEiObzkYqFTKhSsn0ZEb0RlLEXpHWj93gi2HqEwE="
	// The Prometheus Operator's module holds its CRDs, the ServiceMonitor's
	// schema among them (example/prometheus-operator-crd).
	promOperatorModule = "github.com/prometheus-operator/prometheus-operator@v0.85.0"
	promOperatorSum    = "h1:M5xLCLEoaW2IJfnuCwFzzpL+jSVQu3KGT84Pye+fW8s="
	serviceMonitorCRD  = "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"
)

// TestSchemasMatchTheDecoder: the schemas' Kubernetes release is the one
// of the k8s.io/api in go.mod (v0.X.Y is Kubernetes v1.X.Y), so the two
// checks judge the same API.
func TestSchemasMatchTheDecoder(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/api v0\.(\d+\.\d+)\s*$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod requires no k8s.io/api v0.X.Y")
	}
	if want := "k8s.io/kubernetes@v1." + string(m[1]); kubernetesModule != want {
		t.Errorf("the schemas are %s, the decoder's k8s.io/api is v0.%s: set kubernetesModule to %s (and kubernetesSum from go mod download -json)", kubernetesModule, m[1], want)
	}
}

var (
	downloadMu sync.Mutex
	downloaded = map[string]string{} // module@version → its directory
)

// moduleDir downloads module (path@version) through the module proxy,
// checked against the checksum database (a no-op when the module cache
// has it), and returns its directory, refusing a zip whose hash is not
// sum.
func moduleDir(t *testing.T, module, sum string) string {
	t.Helper()
	downloadMu.Lock()
	defer downloadMu.Unlock()
	if dir, ok := downloaded[module]; ok {
		return dir
	}
	cmd := exec.Command("go", "mod", "download", "-json", module)
	cmd.Dir = os.TempDir() // outside this module: go.mod and go.sum stay as they are
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	var m struct{ Dir, Sum, Error string }
	if jerr := json.Unmarshal(out, &m); err != nil || jerr != nil || m.Error != "" {
		t.Fatalf("go mod download %s: %v %v %s", module, err, jerr, m.Error)
	}
	if m.Sum != sum {
		t.Fatalf("%s has hash %s, want %s", module, m.Sum, sum)
	}
	downloaded[module] = m.Dir
	return m.Dir
}

// openAPIDir is the pinned k8s.io/kubernetes's api/openapi-spec/v3.
func openAPIDir(t *testing.T) string {
	t.Helper()
	return filepath.Join(moduleDir(t, kubernetesModule, kubernetesSum), "api", "openapi-spec", "v3")
}

// kubeSchemas compiles the schema of each apiVersion/kind on first use.
type kubeSchemas struct {
	dir      string
	compiler *jsonschema.Compiler
	added    map[string]map[string]string // spec file → "apiVersion kind" → schema name
	compiled map[string]*jsonschema.Schema
}

func newKubeSchemas(t *testing.T) *kubeSchemas {
	k := &kubeSchemas{dir: openAPIDir(t), compiler: jsonschema.NewCompiler(), added: map[string]map[string]string{}, compiled: map[string]*jsonschema.Schema{}}
	k.addCRD(t, filepath.Join(moduleDir(t, promOperatorModule, promOperatorSum), serviceMonitorCRD))
	return k
}

// addCRD adds the schema of each served version of a
// CustomResourceDefinition (its openAPIV3Schema), strict like the rest.
func (k *kubeSchemas) addCRD(t *testing.T, file string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Group    string
			Names    struct{ Kind string }
			Versions []struct {
				Name   string
				Served bool
				Schema struct {
					OpenAPIV3Schema json.RawMessage
				}
			}
		}
	}
	if err := json.Unmarshal(j, &crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		if !v.Served || len(v.Schema.OpenAPIV3Schema) == 0 {
			continue
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(v.Schema.OpenAPIV3Schema))
		if err != nil {
			t.Fatal(err)
		}
		strict(doc)
		gvk := crd.Spec.Group + "/" + v.Name + " " + crd.Spec.Names.Kind
		url := "file:///crd/" + crd.Spec.Group + "/" + v.Name + "/" + crd.Spec.Names.Kind + ".json"
		if err := k.compiler.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
		s, err := k.compiler.Compile(url)
		if err != nil {
			t.Fatalf("%s: %v", gvk, err)
		}
		k.compiled[gvk] = s
	}
	if len(k.compiled) == 0 {
		t.Fatalf("%s: no served version with a schema", file)
	}
}

// specFile is the OpenAPI document of an apiVersion: v1 is the core
// group's api__v1, apps/v1 is apis__apps__v1.
func specFile(apiVersion string) string {
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return "api__" + apiVersion + "_openapi.json"
	}
	return "apis__" + group + "__" + version + "_openapi.json"
}

// schema returns the compiled schema of apiVersion/kind.
func (k *kubeSchemas) schema(apiVersion, kind string) (*jsonschema.Schema, error) {
	gvk := apiVersion + " " + kind
	if s, ok := k.compiled[gvk]; ok {
		return s, nil
	}
	file := specFile(apiVersion)
	url := "file:///kubernetes/" + file
	if k.added[file] == nil {
		f, err := os.Open(filepath.Join(k.dir, file))
		if err != nil {
			return nil, fmt.Errorf("%s: no schemas for apiVersion %s: %v", kind, apiVersion, err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %v", file, err)
		}
		schemas, _ := doc.(map[string]any)["components"].(map[string]any)["schemas"].(map[string]any)
		byKind := map[string]string{}
		for name, s := range schemas {
			strict(s)
			gvks, _ := s.(map[string]any)["x-kubernetes-group-version-kind"].([]any)
			for _, g := range gvks {
				g := g.(map[string]any)
				av := g["version"].(string)
				if grp := g["group"].(string); grp != "" {
					av = grp + "/" + av
				}
				byKind[av+" "+g["kind"].(string)] = name
			}
		}
		if err := k.compiler.AddResource(url, doc); err != nil {
			return nil, err
		}
		k.added[file] = byKind
	}
	name, ok := k.added[file][gvk]
	if !ok {
		return nil, fmt.Errorf("%s has no schema of kind %s", file, kind)
	}
	s, err := k.compiler.Compile(url + "#/components/schemas/" + name)
	if err != nil {
		return nil, err
	}
	k.compiled[gvk] = s
	return s, nil
}

// strict refuses properties a schema does not name, as kubeconform
// -strict does: every object schema with properties and no
// additionalProperties (nor x-kubernetes-preserve-unknown-fields) gets
// additionalProperties false, at every depth.
func strict(v any) {
	switch v := v.(type) {
	case map[string]any:
		_, hasProps := v["properties"]
		_, hasAdditional := v["additionalProperties"]
		_, preserve := v["x-kubernetes-preserve-unknown-fields"]
		if hasProps && !hasAdditional && !preserve {
			v["additionalProperties"] = false
		}
		for _, c := range v {
			strict(c)
		}
	case []any:
		for _, c := range v {
			strict(c)
		}
	}
}

// validate checks one manifest (YAML) against its kind's schema.
func (k *kubeSchemas) validate(doc string) error {
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return err
	}
	var head struct{ APIVersion, Kind string }
	if err := json.Unmarshal(j, &head); err != nil {
		return err
	}
	s, err := k.schema(head.APIVersion, head.Kind)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// manifests renders vals and returns its manifests.
func manifests(t *testing.T, vals map[string]any) []string {
	t.Helper()
	files, err := render(t, vals)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	var docs []string
	for name, text := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		for _, doc := range strings.Split("\n"+text, "\n---") {
			if isComment(doc) {
				continue
			}
			docs = append(docs, doc)
		}
	}
	return docs
}

// TestKubernetesSchemas validates every object of every example against
// the Kubernetes OpenAPI v3 schemas, the ServiceMonitor against its CRD's
// (required fields, types, enums, unknown fields refused), and shows the
// check can fail: a Deployment
// whose container lost its name, one with a field no schema names, and
// one with replicas as a string are each refused.
func TestKubernetesSchemas(t *testing.T) {
	k := newKubeSchemas(t)
	var deployment, monitor string
	for _, file := range examples(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			docs := manifests(t, readValues(t, file))
			if len(docs) < 4 {
				t.Fatalf("%d manifests rendered", len(docs))
			}
			kinds := map[string]int{}
			for _, doc := range docs {
				if m := regexp.MustCompile(`(?m)^kind: (\w+)`).FindStringSubmatch(doc); m != nil {
					kinds[m[1]]++
				}
				if err := k.validate(doc); err != nil {
					t.Errorf("does not match the Kubernetes schema: %v\n%s", err, doc)
				}
				if deployment == "" && strings.Contains(doc, "\nkind: Deployment") {
					deployment = doc
				}
				if monitor == "" && strings.Contains(doc, "\nkind: ServiceMonitor") {
					monitor = doc
				}
			}
			t.Logf("validated %v", kinds)
		})
	}
	if deployment == "" {
		t.Fatal("no example renders a Deployment")
	}
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(deployment), &obj); err != nil {
		t.Fatal(err)
	}
	spec := obj["spec"].(map[string]any)
	container := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	for name, spoil := range map[string]func() (undo func()){
		"a container without a name": func() func() {
			n := container["name"]
			delete(container, "name")
			return func() { container["name"] = n }
		},
		"an unknown field": func() func() {
			container["imagePullPolicyy"] = "Always"
			return func() { delete(container, "imagePullPolicyy") }
		},
		"replicas as a string": func() func() {
			r, had := spec["replicas"]
			spec["replicas"] = "two"
			return func() {
				if had {
					spec["replicas"] = r
				} else {
					delete(spec, "replicas")
				}
			}
		},
	} {
		undo := spoil()
		b, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		if err := k.validate(string(b)); err == nil {
			t.Errorf("a Deployment with %s passed the schema", name)
		}
		undo()
	}
	b, _ := yaml.Marshal(obj)
	if err := k.validate(string(b)); err != nil {
		t.Errorf("the Deployment, restored, fails: %v", err)
	}

	// The ServiceMonitor's schema refuses what its CRD does not name.
	if monitor == "" {
		t.Fatal("no example renders a ServiceMonitor")
	}
	var sm map[string]any
	if err := yaml.Unmarshal([]byte(monitor), &sm); err != nil {
		t.Fatal(err)
	}
	sm["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)["portt"] = "metrics"
	if b, err := yaml.Marshal(sm); err != nil || k.validate(string(b)) == nil {
		t.Errorf("a ServiceMonitor endpoint with a field portt passed the schema (%v)", err)
	}
}
