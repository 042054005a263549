package discovery

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cellrouter/cellrouter/cell/podset"
)

var t0 = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

// mkPod builds a Pod object: ip "" leaves it unplaced; age orders creation.
func mkPod(name, ip string, ready bool, age int, ann map[string]string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "vllm"},
			Annotations: ann, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(age) * time.Second))},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
	}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
	return p
}

func params() Params {
	return Params{Selector: labels.SelectorFromSet(labels.Set{"app": "vllm"}), TargetPort: 8000, ZMQPort: 5557, ReplayPort: 5558, Capacity: 256}
}

func TestDecideCases(t *testing.T) {
	terminating := mkPod("t", "10.0.0.4", true, 0, nil)
	now := metav1.NewTime(t0)
	terminating.DeletionTimestamp = &now
	other := mkPod("o", "10.0.0.5", true, 0, nil)
	other.Labels = map[string]string{"app": "web"}
	failed := mkPod("f", "10.0.0.6", false, 0, nil)
	failed.Status.Phase = corev1.PodFailed
	base := func(id, ip string, routable bool) podset.Pod {
		return podset.Pod{ID: id, UID: "uid-" + id, Address: ip + ":8000", ZMQEndpoint: "tcp://" + ip + ":5557",
			ReplayEndpoint: "tcp://" + ip + ":5558", Routable: routable}
	}
	annotated := base("a", "10.0.0.1", true)
	annotated.ZMQEndpoint, annotated.ReplayEndpoint = "tcp://10.0.0.1:6000", "tcp://10.0.0.1:6001"
	annotated.DataParallelSize, annotated.Model, annotated.KVBlocks, annotated.Events, annotated.Role = 2, "llama", 4096, "exact", "decode"
	cases := []struct {
		name  string
		pods  []*corev1.Pod
		p     func(*Params)
		want  []podset.Pod
		refd  []string
		warns int
	}{
		{name: "ready routable, not ready kept", pods: []*corev1.Pod{mkPod("b", "10.0.0.2", false, 0, nil), mkPod("a", "10.0.0.1", true, 0, nil)},
			want: []podset.Pod{base("a", "10.0.0.1", true), base("b", "10.0.0.2", false)}},
		{name: "no ip, finished, other labels: absent", pods: []*corev1.Pod{mkPod("n", "", true, 0, nil), failed, other}},
		{name: "terminating kept, not routable", pods: []*corev1.Pod{terminating}, want: []podset.Pod{base("t", "10.0.0.4", false)}},
		{name: "annotations", pods: []*corev1.Pod{mkPod("a", "10.0.0.1", true, 0, map[string]string{
			AnnotationZMQEndpoint: "tcp://10.0.0.1:6000", AnnotationReplayEndpoint: "tcp://10.0.0.1:6001", AnnotationDataParallelSize: "2",
			LabelModel: "llama", AnnotationKVBlocks: "4096", AnnotationEvents: "exact", AnnotationRole: "decode"})},
			want: []podset.Pod{annotated}},
		{name: "bad annotations ignored and named", pods: []*corev1.Pod{mkPod("a", "10.0.0.1", true, 0, map[string]string{
			AnnotationZMQEndpoint: "10.0.0.1:6000", AnnotationDataParallelSize: "0", AnnotationKVBlocks: "-1", AnnotationEvents: "some", AnnotationRole: "x"})},
			want: []podset.Pod{base("a", "10.0.0.1", true)}, warns: 5},
		{name: "no zmq port: events none", pods: []*corev1.Pod{mkPod("a", "10.0.0.1", true, 0, nil)}, p: func(p *Params) { p.ZMQPort = 0; p.DefaultModel = "m" },
			want: []podset.Pod{{ID: "a", UID: "uid-a", Address: "10.0.0.1:8000", Routable: true, Events: "none", Model: "m"}}},
		{name: "cap refuses the youngest", pods: []*corev1.Pod{mkPod("young", "10.0.0.3", true, 9, nil), mkPod("old", "10.0.0.1", true, 1, nil),
			mkPod("mid", "10.0.0.2", true, 5, map[string]string{AnnotationDataParallelSize: "2"})},
			p: func(p *Params) { p.Capacity = 3 }, refd: []string{"young"},
			want: []podset.Pod{func() podset.Pod { m := base("mid", "10.0.0.2", true); m.DataParallelSize = 2; return m }(), base("old", "10.0.0.1", true)}},
		{name: "ipv6", pods: []*corev1.Pod{mkPod("a", "fd00::1", true, 0, nil)},
			want: []podset.Pod{{ID: "a", UID: "uid-a", Address: "[fd00::1]:8000", ZMQEndpoint: "tcp://[fd00::1]:5557", ReplayEndpoint: "tcp://[fd00::1]:5558", Routable: true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := params()
			if tc.p != nil {
				tc.p(&p)
			}
			got := Decide(tc.pods, p)
			if !reflect.DeepEqual(got.Pods, tc.want) && !(len(got.Pods) == 0 && len(tc.want) == 0) {
				t.Errorf("got pods\n%+v\nwant\n%+v", got.Pods, tc.want)
			}
			var refd []string
			for _, r := range got.Refused {
				refd = append(refd, r.ID)
				if r.Reason != podset.ReasonCap || r.Source != podset.SourceKubernetes {
					t.Errorf("got refusal %+v, want reason cap from kubernetes", r)
				}
			}
			if fmt.Sprint(refd) != fmt.Sprint(tc.refd) {
				t.Errorf("got refused %v, want %v", refd, tc.refd)
			}
			if len(got.Warnings) != tc.warns {
				t.Errorf("got warnings %q, want %d", got.Warnings, tc.warns)
			}
		})
	}
}

// naiveDecide is the reference model: each rule applied on its own, in the
// plainest way, over pods sorted by age once.
func naiveDecide(pods []*corev1.Pod, capacity int) (routable, kept, refused []string) {
	sorted := append([]*corev1.Pod(nil), pods...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if !sorted[i].CreationTimestamp.Equal(&sorted[j].CreationTimestamp) {
			return sorted[i].CreationTimestamp.Before(&sorted[j].CreationTimestamp)
		}
		return sorted[i].Name < sorted[j].Name
	})
	used := 0
	for _, p := range sorted {
		if p.Status.PodIP == "" || p.Labels["app"] != "vllm" || p.Status.Phase == corev1.PodFailed {
			continue
		}
		size := 1
		if p.Annotations[AnnotationDataParallelSize] == "4" {
			size = 4
		}
		if used+size > capacity {
			refused = append(refused, p.Name)
			continue
		}
		used += size
		isReady := p.Status.Conditions[0].Status == corev1.ConditionTrue
		if isReady && p.DeletionTimestamp == nil {
			routable = append(routable, p.Name)
		} else {
			kept = append(kept, p.Name)
		}
	}
	sort.Strings(routable)
	sort.Strings(kept)
	sort.Strings(refused)
	return routable, kept, refused
}

func TestDecideMatchesNaiveModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	now := metav1.NewTime(t0)
	for i := range 1000 {
		var pods []*corev1.Pod
		for j := range r.IntN(20) {
			ip := ""
			if r.IntN(5) > 0 {
				ip = fmt.Sprintf("10.0.%d.%d", j/250, j%250+1)
			}
			var ann map[string]string
			if r.IntN(4) == 0 {
				ann = map[string]string{AnnotationDataParallelSize: "4"}
			}
			p := mkPod(fmt.Sprintf("p%02d", j), ip, r.IntN(3) > 0, r.IntN(5), ann)
			switch r.IntN(8) {
			case 0:
				p.DeletionTimestamp = &now
			case 1:
				p.Labels["app"] = "other"
			case 2:
				p.Status.Phase = corev1.PodFailed
			}
			pods = append(pods, p)
		}
		capacity := r.IntN(24)
		p := params()
		p.Capacity = capacity
		r.Shuffle(len(pods), func(a, b int) { pods[a], pods[b] = pods[b], pods[a] })
		got := Decide(pods, p)
		var gr, gk, gf []string
		for _, q := range got.Pods {
			if q.Routable {
				gr = append(gr, q.ID)
			} else {
				gk = append(gk, q.ID)
			}
		}
		for _, q := range got.Refused {
			gf = append(gf, q.ID)
		}
		wr, wk, wf := naiveDecide(pods, capacity)
		if fmt.Sprint(gr, gk, gf) != fmt.Sprint(wr, wk, wf) {
			t.Fatalf("case %d (capacity %d): got routable %v kept %v refused %v, want %v %v %v", i, capacity, gr, gk, gf, wr, wk, wf)
		}
		// Replicas see the informer cache in any order: the same decision.
		r.Shuffle(len(pods), func(a, b int) { pods[a], pods[b] = pods[b], pods[a] })
		if again := Decide(pods, p); !reflect.DeepEqual(again, got) {
			t.Fatalf("case %d: the order of the Pods changed the decision", i)
		}
	}
}

// FuzzDecideAnnotations feeds arbitrary annotation values (outside input,
// written by whoever deploys the engines): Decide never panics, keeps the
// pod, and every endpoint it derives is a valid ZMQ address.
func FuzzDecideAnnotations(f *testing.F) {
	f.Add("tcp://10.0.0.1:6000", "tcp://10.0.0.1:6001", "2", "llama", "4096", "exact", "decode")
	f.Add("", "", "", "", "", "", "")
	f.Add("tcp://:1", "udp://x:1", "1025", "", "-5", "none", "both")
	f.Add("tcp://[::1]:70000", "tcp://h:0", "x", "m", "9999999999999999999999", "EXACT", "prefill")
	f.Fuzz(func(t *testing.T, zmq, replay, dp, model, kv, ev, role string) {
		ann := map[string]string{AnnotationZMQEndpoint: zmq, AnnotationReplayEndpoint: replay, AnnotationDataParallelSize: dp,
			LabelModel: model, AnnotationKVBlocks: kv, AnnotationEvents: ev, AnnotationRole: role}
		res := Decide([]*corev1.Pod{mkPod("a", "10.0.0.1", true, 0, ann)}, params())
		if len(res.Pods) != 1 {
			t.Fatalf("got %d pods, want 1", len(res.Pods))
		}
		p := res.Pods[0]
		for _, ep := range []string{p.ZMQEndpoint, p.ReplayEndpoint} {
			if ep != "" && !validEndpoint(ep) {
				t.Errorf("got endpoint %q, not a ZMQ address", ep)
			}
		}
		if p.DataParallelSize < 0 || p.DataParallelSize > 1024 || p.KVBlocks < 0 {
			t.Errorf("got size %d, kv %d out of range", p.DataParallelSize, p.KVBlocks)
		}
		if p.Role != "" && p.Role != "prefill" && p.Role != "decode" && p.Role != "both" {
			t.Errorf("got role %q", p.Role)
		}
	})
}

func BenchmarkDecide256(b *testing.B) {
	var pods []*corev1.Pod
	for i := range 300 {
		pods = append(pods, mkPod(fmt.Sprintf("pod-%03d", i), fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), i%7 != 0, i, nil))
	}
	p := params()
	b.ReportAllocs()
	for b.Loop() {
		if res := Decide(pods, p); len(res.Pods) != 256 {
			b.Fatalf("got %d pods", len(res.Pods))
		}
	}
}
