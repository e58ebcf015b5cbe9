package copse_test

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/copse-dev/copse/e2e/cluster"
)

// The chart's RBAC is held to two lists:
//
//   - the +kubebuilder:rbac markers in the operator's code (internal/,
//     operator/): every permission a marker asks for must be granted, and
//     every permission granted must be asked for by a marker or be one of
//     frameworkPermissions (what controller-runtime itself needs);
//   - rbac-reviewed.yaml, the reviewed list of every rendered Role and
//     ClusterRole with its rules and subjects, per install scenario: any
//     change of the chart's RBAC fails here until the file is rewritten with
//     `make chart-rbac` and the diff is reviewed.

const goldenFile = "rbac-reviewed.yaml"

// updateGoldenEnvVar, set to 1 (`make chart-rbac`), rewrites goldenFile.
const updateGoldenEnvVar = "COPSE_UPDATE_RBAC_GOLDEN"

// operatorSubject is the only subject any binding of the chart may name,
// but for kueueReader.
const operatorSubject = "ServiceAccount copse-system/copse-operator"

// kueueReader is the one role bound to someone else: with config.kueue.enabled,
// Kueue's controller (its install's ServiceAccount) may read PodCliqueSets, the
// owners of copse's Kueue Workloads, and nothing more.
var kueueReader = grantedRole{
	Kind: "ClusterRole", Name: "copse-operator-kueue-reader",
	BoundTo: []string{"ServiceAccount kueue-system/kueue-controller-manager"},
	Rules:   []rbacv1.PolicyRule{{APIGroups: []string{"grove.io"}, Resources: []string{"podcliquesets"}, Verbs: []string{"get", "list", "watch"}}},
}

// grantedRole is a Role or ClusterRole as rendered, with the subjects bound
// to it.
type grantedRole struct {
	Kind      string              `json:"kind"`
	Namespace string              `json:"namespace,omitempty"`
	Name      string              `json:"name"`
	BoundTo   []string            `json:"boundTo"`
	Rules     []rbacv1.PolicyRule `json:"rules"`
	// Rendered is false for a role a binding names but the chart does not
	// render (e.g. a built-in ClusterRole): the golden file shows it.
	NotRendered bool `json:"notRendered,omitempty"`
}

// renderedRBAC is every role of one rendering, sorted.
func renderedRBAC(t *testing.T, values map[string]any) []grantedRole {
	t.Helper()
	docs := template(t, values)
	roles := map[string]*grantedRole{}
	for key, doc := range docs {
		var ns, name string
		var rules []rbacv1.PolicyRule
		switch {
		case strings.HasPrefix(key, "ClusterRole/"):
			r := &rbacv1.ClusterRole{}
			into(t, doc, r)
			if r.AggregationRule != nil {
				t.Errorf("%s aggregates other roles; the chart's RBAC must be explicit", key)
			}
			name, rules = r.Name, r.Rules
		case strings.HasPrefix(key, "Role/"):
			r := &rbacv1.Role{}
			into(t, doc, r)
			ns, name, rules = r.Namespace, r.Name, r.Rules
		default:
			continue
		}
		normalized := make([]rbacv1.PolicyRule, 0, len(rules))
		for _, rule := range rules {
			rule = *rule.DeepCopy()
			for _, s := range [][]string{rule.APIGroups, rule.Resources, rule.ResourceNames, rule.Verbs, rule.NonResourceURLs} {
				sort.Strings(s)
			}
			normalized = append(normalized, rule)
		}
		kind := strings.SplitN(key, "/", 2)[0]
		roles[kind+"/"+ns+"/"+name] = &grantedRole{Kind: kind, Namespace: ns, Name: name, Rules: normalized, BoundTo: []string{}}
	}
	for key, doc := range docs {
		var ns string
		var ref rbacv1.RoleRef
		var subjects []rbacv1.Subject
		switch {
		case strings.HasPrefix(key, "ClusterRoleBinding/"):
			b := &rbacv1.ClusterRoleBinding{}
			into(t, doc, b)
			ref, subjects = b.RoleRef, b.Subjects
		case strings.HasPrefix(key, "RoleBinding/"):
			b := &rbacv1.RoleBinding{}
			into(t, doc, b)
			ns, ref, subjects = b.Namespace, b.RoleRef, b.Subjects
		default:
			continue
		}
		roleKey := ref.Kind + "/" + ns + "/" + ref.Name
		if ref.Kind == "ClusterRole" {
			roleKey = "ClusterRole//" + ref.Name
		}
		role, ok := roles[roleKey]
		if !ok {
			role = &grantedRole{Kind: ref.Kind, Name: ref.Name, NotRendered: true, BoundTo: []string{}}
			if ref.Kind == "Role" {
				role.Namespace = ns
			}
			roles[roleKey] = role
		}
		for _, s := range subjects {
			subject := fmt.Sprintf("%s %s/%s", s.Kind, s.Namespace, s.Name)
			if ref.Kind == "ClusterRole" && ns != "" {
				subject += " (in namespace " + ns + ")"
			}
			role.BoundTo = append(role.BoundTo, subject)
		}
	}
	out := make([]grantedRole, 0, len(roles))
	for _, key := range sortedKeys(roles) {
		sort.Strings(roles[key].BoundTo)
		out = append(out, *roles[key])
	}
	return out
}

func TestRBACMatchesTheReviewedList(t *testing.T) {
	got := map[string][]grantedRole{}
	for _, sc := range scenarios {
		got[sc.name] = renderedRBAC(t, sc.values)
	}
	body, err := yaml.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	header := "# Every Role and ClusterRole charts/copse renders, with its rules and the subjects\n" +
		"# bound to it, for each install scenario of chart_test.go (scenarios). This is the\n" +
		"# reviewed list of copse's permissions: rbac_test.go fails when the chart differs.\n" +
		"# After a deliberate change, rewrite it with `make chart-rbac` and review the diff.\n"
	if os.Getenv(updateGoldenEnvVar) == "1" {
		if err := os.WriteFile(goldenFile, []byte(header+string(body)), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s: review its diff", goldenFile)
		return
	}
	data, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatalf("read the reviewed RBAC list: %v (create it with `make chart-rbac`)", err)
	}
	var want map[string][]grantedRole
	if err := yaml.UnmarshalStrict(data, &want); err != nil {
		t.Fatalf("%s: %v", goldenFile, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the chart's RBAC differs from the reviewed list %s (-reviewed +rendered):\n%s\n"+
			"If the change is intended, run `make chart-rbac` and have the diff of %s reviewed.", goldenFile, diff, goldenFile)
	}
}

func TestRBACIsBoundToTheOperatorOnlyAndNeverWildcard(t *testing.T) {
	for _, sc := range scenarios {
		for _, role := range renderedRBAC(t, sc.values) {
			where := fmt.Sprintf("%s: %s %s/%s", sc.name, role.Kind, role.Namespace, role.Name)
			if role.NotRendered {
				t.Errorf("%s: a binding names a role the chart does not render", where)
			}
			if role.Name == kueueReader.Name {
				if diff := cmp.Diff(kueueReader, role); diff != "" {
					t.Errorf("%s grants Kueue more than reading PodCliqueSets (-want +got):\n%s", where, diff)
				}
				continue
			}
			if !slices.Equal(role.BoundTo, []string{operatorSubject}) {
				t.Errorf("%s is bound to %v, want exactly %s", where, role.BoundTo, operatorSubject)
			}
			if role.Kind == "Role" && role.Namespace != releaseNamespace {
				t.Errorf("%s: a Role outside the release namespace", where)
			}
			for _, rule := range role.Rules {
				for _, list := range [][]string{rule.APIGroups, rule.Resources, rule.Verbs} {
					if slices.Contains(list, "*") {
						t.Errorf("%s: wildcard in %+v", where, rule)
					}
				}
				if len(rule.NonResourceURLs) > 0 {
					t.Errorf("%s: non-resource URLs %v", where, rule.NonResourceURLs)
				}
				if role.Kind == "ClusterRole" && slices.Contains(rule.APIGroups, "") &&
					(slices.Contains(rule.Resources, "secrets") || slices.Contains(rule.Resources, "configmaps")) &&
					!isTrainJobObjectsRule(rule) {
					t.Errorf("%s: Secrets or ConfigMaps cluster-wide beyond what the TrainJob front-end needs: %+v", where, rule)
				}
				if slices.Contains(rule.APIGroups, "admissionregistration.k8s.io") && len(rule.ResourceNames) == 0 {
					t.Errorf("%s: webhook configurations must be limited to the chart's own by resourceNames: %+v", where, rule)
				}
			}
		}
	}
}

// isTrainJobObjectsRule: the one cluster-wide use of ConfigMaps and Secrets,
// the TrainJob front-end's (Kubeflow Trainer's objects in the TrainJob's
// namespace): ConfigMaps it makes and reads back (runtime snapshot, MPI
// hostfile, which it applies server-side: patch), never deleted (garbage
// collection does that), and Secrets it only creates (the MPI SSH key):
// never read, listed or deleted.
func isTrainJobObjectsRule(rule rbacv1.PolicyRule) bool {
	within := func(verbs ...string) bool {
		for _, v := range rule.Verbs {
			if !slices.Contains(verbs, v) {
				return false
			}
		}
		return true
	}
	switch {
	case slices.Equal(rule.Resources, []string{"configmaps"}):
		return within("create", "get", "list", "patch", "update", "watch")
	case slices.Equal(rule.Resources, []string{"secrets"}):
		return within("create")
	}
	return false
}

// permission is one verb on one resource of one API group.
type permission struct{ group, resource, verb string }

func (p permission) String() string {
	group := p.group
	if group == "" {
		group = "core"
	}
	return fmt.Sprintf("%s %s/%s", p.verb, group, p.resource)
}

// frameworkPermissions are granted although no marker asks for them:
// controller-runtime needs them, not copse's code.
var frameworkPermissions = map[permission]string{
	{"coordination.k8s.io", "leases", "create"}: "leader election",
	{"coordination.k8s.io", "leases", "get"}:    "leader election",
	{"coordination.k8s.io", "leases", "update"}: "leader election (renew, release on stop)",
	{"", "events", "create"}:                    "leader election records core/v1 events",
	{"", "events", "patch"}:                     "leader election records core/v1 events",
}

// marker is one +kubebuilder:rbac marker.
type marker struct {
	where       string
	permissions []permission
}

var markerPattern = regexp.MustCompile(`^\s*//\s*\+kubebuilder:rbac:(.+)$`)

// rbacMarkers reads every +kubebuilder:rbac marker of the operator's code.
func rbacMarkers(t *testing.T) []marker {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var markers []marker
	for _, dir := range []string{"internal", "operator", "api"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer func() { _ = f.Close() }()
			sc := bufio.NewScanner(f)
			for line := 1; sc.Scan(); line++ {
				m := markerPattern.FindStringSubmatch(sc.Text())
				if m == nil {
					continue
				}
				rel, _ := filepath.Rel(root, path)
				where := fmt.Sprintf("%s:%d", rel, line)
				fields := map[string][]string{}
				for _, kv := range strings.Split(m[1], ",") {
					k, v, ok := strings.Cut(kv, "=")
					if !ok {
						t.Fatalf("%s: cannot parse marker %q", where, m[1])
					}
					for _, item := range strings.Split(v, ";") {
						fields[k] = append(fields[k], strings.Trim(item, `"`))
					}
				}
				mk := marker{where: where}
				for _, g := range fields["groups"] {
					if g == "core" {
						g = ""
					}
					for _, r := range fields["resources"] {
						for _, v := range fields["verbs"] {
							mk.permissions = append(mk.permissions, permission{g, r, v})
						}
					}
				}
				if len(mk.permissions) == 0 {
					t.Fatalf("%s: marker %q grants nothing this test understands", where, m[1])
				}
				markers = append(markers, mk)
			}
			return sc.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(markers) == 0 {
		t.Fatal("found no +kubebuilder:rbac markers: is the repository root right?")
	}
	return markers
}

// grants reports whether some rule of roles grants p. A rule limited by
// resourceNames counts (the chart narrows a marker to copse's own objects),
// except for create, which the API server cannot authorize by name.
func grants(roles []grantedRole, p permission) bool {
	for _, role := range roles {
		for _, rule := range role.Rules {
			if slices.Contains(rule.APIGroups, p.group) && slices.Contains(rule.Resources, p.resource) && slices.Contains(rule.Verbs, p.verb) &&
				(len(rule.ResourceNames) == 0 || (p.verb != "create" && p.verb != "deletecollection")) {
				return true
			}
		}
	}
	return false
}

func TestRBACGrantsWhatTheMarkersAskFor(t *testing.T) {
	markers := rbacMarkers(t)
	// Every marker applies to the default install (self-managed
	// certificates), which needs the most.
	roles := renderedRBAC(t, nil)
	for _, mk := range markers {
		for _, p := range mk.permissions {
			if !grants(roles, p) {
				t.Errorf("%s asks for %s, which the chart does not grant: add it to templates/rbac.yaml (scoped as tightly as the code allows), then run `make chart-rbac`", mk.where, p)
			}
		}
	}
}

func TestRBACGrantsNothingTheMarkersDoNotAskFor(t *testing.T) {
	asked := map[permission]bool{}
	for _, mk := range rbacMarkers(t) {
		for _, p := range mk.permissions {
			asked[p] = true
		}
	}
	for _, sc := range scenarios {
		for _, role := range renderedRBAC(t, sc.values) {
			for _, rule := range role.Rules {
				for _, g := range rule.APIGroups {
					for _, r := range rule.Resources {
						for _, v := range rule.Verbs {
							p := permission{g, r, v}
							if _, framework := frameworkPermissions[p]; !asked[p] && !framework {
								t.Errorf("%s: %s %s/%s grants %s, which no +kubebuilder:rbac marker asks for", sc.name, role.Kind, role.Namespace, role.Name, p)
							}
						}
					}
				}
			}
		}
	}
}
