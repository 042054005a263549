package discovery_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/cellrouter/cellrouter/cell/discovery"
	"github.com/cellrouter/cellrouter/cell/discovery/kubetest"
	"github.com/cellrouter/cellrouter/cell/podset"
)

// follower is one replica's view: a Source publishing into a Set.
type follower struct {
	set    *podset.Set
	src    *discovery.Source
	cancel context.CancelFunc
	done   chan struct{}
}

func follow(t *testing.T, p *kubetest.Plane, kc discovery.KubernetesConfig, capacity int) *follower {
	t.Helper()
	kc.Enabled, kc.Kubeconfig = true, p.Kubeconfig
	f := &follower{set: podset.New(nil), done: make(chan struct{})}
	var err error
	f.src, err = discovery.New(kc, capacity, func(r discovery.Result) { f.set.Publish(podset.SourceKubernetes, r.Pods, r.Refused) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	go func() { defer close(f.done); _ = f.src.Run(ctx) }()
	t.Cleanup(f.stop)
	select {
	case <-f.src.Synced():
	case <-time.After(30 * time.Second):
		t.Fatal("the source did not sync")
	}
	return f
}

func (f *follower) stop() {
	f.cancel()
	<-f.done
}

// state renders a snapshot as "id=address/r|k ..." (r routable, k kept).
func state(s *podset.Snapshot) string {
	var parts []string
	for _, p := range s.Pods {
		st := "k"
		if p.Routable {
			st = "r"
		}
		parts = append(parts, fmt.Sprintf("%s=%s/%s", p.ID, p.Address, st))
	}
	return strings.Join(parts, " ")
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestSourceFollowsPods walks one pod through its life: Pending (absent),
// Ready (routable), NotReady (kept), a new IP under the same name (a new
// generation), deleted (gone); a pod of another selector never shows. Two
// sources (two replicas of a cell) end with the same set.
func TestSourceFollowsPods(t *testing.T) {
	p, ns := needPlane(t)
	ctx := ctxT(t)
	kc := discovery.DefaultKubernetesConfig()
	kc.Namespace, kc.Selector = ns, "app=vllm"
	a := follow(t, p, kc, 256)
	b := follow(t, p, kc, 256)
	want := func(s string) {
		t.Helper()
		for _, f := range []*follower{a, b} {
			eventually(t, 20*time.Second, "pod set "+s, func() (bool, string) { got := state(f.set.Load()); return got == s, got })
		}
	}
	vllm := map[string]string{"app": "vllm"}
	if err := p.CreatePod(ctx, ns, kubetest.PodSpec{Name: "e0", Labels: vllm}); err != nil {
		t.Fatal(err)
	}
	if err := p.StartPod(ctx, ns, kubetest.PodSpec{Name: "web", Labels: map[string]string{"app": "web"}}, "127.0.0.40"); err != nil {
		t.Fatal(err)
	}
	want("")
	if err := p.SetStatus(ctx, ns, "e0", "127.0.0.41", true); err != nil {
		t.Fatal(err)
	}
	want("e0=127.0.0.41:8000/r")
	if err := p.SetStatus(ctx, ns, "e0", "127.0.0.41", false); err != nil {
		t.Fatal(err)
	}
	want("e0=127.0.0.41:8000/k")
	uid := a.set.Load().Pods[0].UID
	// A rescheduled pod: deleted and created again under its name, at
	// another IP. Its generation changes with the uid and address.
	if err := p.DeletePod(ctx, ns, "e0"); err != nil {
		t.Fatal(err)
	}
	want("")
	if err := p.StartPod(ctx, ns, kubetest.PodSpec{Name: "e0", Labels: vllm}, "127.0.0.42"); err != nil {
		t.Fatal(err)
	}
	want("e0=127.0.0.42:8000/r")
	if got := a.set.Load().Pods[0]; got.UID == uid || got.ZMQEndpoint != "tcp://127.0.0.42:5557" {
		t.Errorf("got %+v, want a new uid and the new IP's endpoint", got)
	}
	if ga, gb := a.set.Load().Pods, b.set.Load().Pods; fmt.Sprint(ga) != fmt.Sprint(gb) {
		t.Errorf("replicas disagree:\n%+v\n%+v", ga, gb)
	}
	if err := p.DeletePod(ctx, ns, "e0"); err != nil {
		t.Fatal(err)
	}
	want("")
}

// TestSourceCapRefusesYoungest offers more pods than the capacity: the
// oldest are held, the rest refused (never a crash), and a refused pod is
// taken once an older one goes.
func TestSourceCapRefusesYoungest(t *testing.T) {
	p, ns := needPlane(t)
	ctx := ctxT(t)
	kc := discovery.DefaultKubernetesConfig()
	kc.Namespace, kc.Selector = ns, "app=vllm"
	f := follow(t, p, kc, 3)
	for i := range 5 {
		// Creation timestamps have a resolution of a second: space the
		// pods so that their age decides, not their names.
		if i > 0 {
			time.Sleep(1100 * time.Millisecond)
		}
		if err := p.StartPod(ctx, ns, kubetest.PodSpec{Name: fmt.Sprintf("z%d", 4-i), Labels: map[string]string{"app": "vllm"}}, kubetest.LoopbackIP(50+i)); err != nil {
			t.Fatal(err)
		}
	}
	refused := func() string {
		var ids []string
		for _, r := range f.set.Load().Refused {
			ids = append(ids, r.ID+":"+r.Reason)
		}
		sort.Strings(ids)
		return strings.Join(ids, " ")
	}
	eventually(t, 20*time.Second, "the two youngest refused", func() (bool, string) {
		return refused() == "z0:cap z1:cap" && len(f.set.Load().Pods) == 3, refused() + " | " + state(f.set.Load())
	})
	if err := p.DeletePod(ctx, ns, "z4"); err != nil { // the oldest
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "z1 taken in z4's place", func() (bool, string) {
		s := f.set.Load()
		return refused() == "z0:cap" && s.Has("z1") && !s.Has("z4"), refused() + " | " + state(s)
	})
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installPoolCRD installs testdata/inferencepool-crd.yaml (once) and waits
// until the API serves InferencePools.
func installPoolCRD(t *testing.T, p *kubetest.Plane) {
	t.Helper()
	ctx := ctxT(t)
	f, err := os.Open("testdata/inferencepool-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var obj unstructured.Unstructured
	if err := yaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&obj.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Dynamic.Resource(crdGVR).Create(ctx, &obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("the API server refused the CRD: %v", err)
	}
	eventually(t, 30*time.Second, "InferencePools served", func() (bool, string) {
		_, err := p.Dynamic.Resource(discovery.InferencePoolGVR).Namespace("default").List(ctx, metav1.ListOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

func pool(ns, name, app string, port int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"selector":          map[string]any{"matchLabels": map[string]any{"app": app}},
			"targetPorts":       []any{map[string]any{"number": int64(port)}},
			"endpointPickerRef": map[string]any{"name": "cellrouter", "port": map[string]any{"number": int64(9002)}},
		},
	}}
}

// TestSourceFollowsInferencePool discovers pods through an InferencePool:
// its selector and first target port; a change of the pool's selector
// moves the set; a deleted pool empties it.
func TestSourceFollowsInferencePool(t *testing.T) {
	p, ns := needPlane(t)
	installPoolCRD(t, p)
	ctx := ctxT(t)
	pools := p.Dynamic.Resource(discovery.InferencePoolGVR).Namespace(ns)
	kc := discovery.DefaultKubernetesConfig()
	kc.Namespace, kc.InferencePool = ns, "llama"
	f := follow(t, p, kc, 256)
	if err := p.StartPod(ctx, ns, kubetest.PodSpec{Name: "a", Labels: map[string]string{"app": "a"}}, "127.0.0.60"); err != nil {
		t.Fatal(err)
	}
	if err := p.StartPod(ctx, ns, kubetest.PodSpec{Name: "b", Labels: map[string]string{"app": "b"}}, "127.0.0.61"); err != nil {
		t.Fatal(err)
	}
	want := func(s string) {
		t.Helper()
		eventually(t, 20*time.Second, "pod set "+s, func() (bool, string) { got := state(f.set.Load()); return got == s, got })
	}
	want("") // no pool yet: nothing is selected
	if _, err := pools.Create(ctx, pool(ns, "llama", "a", 8200), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want("a=127.0.0.60:8200/r")
	cur, err := pools.Get(ctx, "llama", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	next := pool(ns, "llama", "b", 8300)
	next.SetResourceVersion(cur.GetResourceVersion())
	if _, err := pools.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want("b=127.0.0.61:8300/r")
	if err := pools.Delete(ctx, "llama", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want("")
	if n := f.src.Counters().PoolErrors.Load(); n != 0 {
		t.Errorf("got %d pool errors, want 0", n)
	}
}
