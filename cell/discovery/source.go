package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Counters are a Source's counters, plain atomics for the cell's metrics.
type Counters struct {
	// Decisions counts the pod sets decided (one per change seen).
	Decisions atomic.Uint64
	// WatchErrors counts the watches and lists that failed; the informers
	// retry them with backoff.
	WatchErrors atomic.Uint64
	// PoolErrors counts InferencePool objects the cell could not use.
	PoolErrors atomic.Uint64
}

// Source follows the engine Pods of a namespace through client-go
// informers (list, watch with bookmarks, resync, reconnection with backoff:
// all the reflector's) and hands every decided pod set to its publish
// function. It polls nothing itself.
type Source struct {
	cfg       KubernetesConfig
	namespace string
	capacity  int
	publish   func(Result)
	log       *slog.Logger
	client    kubernetes.Interface
	dyn       dynamic.Interface
	synced    chan struct{}
	counters  Counters

	mu       sync.Mutex // serialises decisions (two informers call in)
	podStore cache.Store
	ready    func() bool
	pool     *PoolSpec // nil: none (yet), or unusable
	warnings []string
}

// New returns a Source for cfg (validated, enabled) that publishes to
// publish, allowing capacity index holders. publish is called on an
// informer goroutine, one call at a time; it must not block for long.
func New(cfg KubernetesConfig, capacity int, publish func(Result), log *slog.Logger) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled {
		return nil, fmt.Errorf("%w: discovery.kubernetes.enabled = false", ErrConfig)
	}
	if log == nil {
		log = slog.Default()
	}
	ns, err := resolveNamespace(cfg.Namespace)
	if err != nil {
		return nil, err
	}
	rc, err := restConfig(cfg.Kubeconfig)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("discovery: kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("discovery: kubernetes dynamic client: %w", err)
	}
	return &Source{cfg: cfg, namespace: ns, capacity: capacity, publish: publish, log: log.With("source", "kubernetes", "namespace", ns),
		client: client, dyn: dyn, synced: make(chan struct{})}, nil
}

// Namespace returns the namespace the Source watches.
func (s *Source) Namespace() string { return s.namespace }

// Counters returns the Source's counters.
func (s *Source) Counters() *Counters { return &s.counters }

// Synced is closed once the informers have listed everything and the first
// pod set was published.
func (s *Source) Synced() <-chan struct{} { return s.synced }

// Run starts the informers, publishes a pod set after the initial list and
// after every change, and blocks until ctx ends and the informers have
// stopped. It returns nil then.
func (s *Source) Run(ctx context.Context) error {
	podOpts := []informers.SharedInformerOption{informers.WithNamespace(s.namespace)}
	if s.cfg.Selector != "" {
		sel := s.cfg.Selector
		podOpts = append(podOpts, informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }))
	}
	pods := informers.NewSharedInformerFactoryWithOptions(s.client, s.cfg.Resync, podOpts...)
	podInf := pods.Core().V1().Pods().Informer()
	onWatchError := func(r *cache.Reflector, err error) {
		s.counters.WatchErrors.Add(1)
		if !errors.Is(err, context.Canceled) {
			s.log.Warn("discovery: watch failed; the informer retries with backoff", "err", err)
		}
	}
	if err := podInf.SetWatchErrorHandler(onWatchError); err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	if _, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.decide() },
		UpdateFunc: func(any, any) { s.decide() },
		DeleteFunc: func(any) { s.decide() },
	}); err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	synced := []cache.InformerSynced{podInf.HasSynced}
	var poolFactory dynamicinformer.DynamicSharedInformerFactory
	if s.cfg.InferencePool != "" {
		name := s.cfg.InferencePool
		poolFactory = dynamicinformer.NewFilteredDynamicSharedInformerFactory(s.dyn, s.cfg.Resync, s.namespace,
			func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
			})
		poolInf := poolFactory.ForResource(InferencePoolGVR).Informer()
		if err := poolInf.SetWatchErrorHandler(onWatchError); err != nil {
			return fmt.Errorf("discovery: %w", err)
		}
		if _, err := poolInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { s.setPool(o) },
			UpdateFunc: func(_, o any) { s.setPool(o) },
			DeleteFunc: func(any) { s.setPool(nil) },
		}); err != nil {
			return fmt.Errorf("discovery: %w", err)
		}
		synced = append(synced, poolInf.HasSynced)
	}
	s.mu.Lock()
	s.podStore = podInf.GetStore()
	s.ready = func() bool {
		for _, f := range synced {
			if !f() {
				return false
			}
		}
		return true
	}
	s.mu.Unlock()

	pods.Start(ctx.Done())
	if poolFactory != nil {
		poolFactory.Start(ctx.Done())
	}
	if cache.WaitForCacheSync(ctx.Done(), synced...) {
		s.decide()
		close(s.synced)
		s.log.Info("discovery: synced", "selector", s.cfg.Selector, "inference_pool", s.cfg.InferencePool)
	}
	<-ctx.Done()
	pods.Shutdown()
	if poolFactory != nil {
		poolFactory.Shutdown()
	}
	return nil
}

// setPool takes a new version of the InferencePool (nil: deleted).
func (s *Source) setPool(obj any) {
	var spec *PoolSpec
	if u, ok := obj.(*unstructured.Unstructured); ok {
		p, err := ParsePool(u)
		if err != nil {
			s.counters.PoolErrors.Add(1)
			s.log.Error("discovery: the InferencePool is unusable; no pod is selected until it is fixed", "err", err)
		} else {
			spec = &p
		}
	} else if obj == nil {
		s.log.Warn("discovery: the InferencePool is gone; no pod is selected", "inference_pool", s.cfg.InferencePool)
	}
	s.mu.Lock()
	s.pool = spec
	s.mu.Unlock()
	s.decide()
}

// decide derives the pod set from the informers' caches and publishes it.
// Nothing is published before the initial lists are complete.
func (s *Source) decide() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.podStore == nil || !s.ready() {
		return
	}
	p := Params{TargetPort: s.cfg.TargetPort, ZMQPort: s.cfg.ZMQPort, ReplayPort: s.cfg.ReplayPort,
		DefaultModel: s.cfg.DefaultModel, Capacity: s.capacity}
	if s.cfg.InferencePool != "" {
		if s.pool == nil {
			p.Selector = labels.Nothing()
		} else {
			p.Selector, p.TargetPort = s.pool.Selector, s.pool.TargetPort
		}
	}
	objs := s.podStore.List()
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok {
			pods = append(pods, pod)
		}
	}
	res := Decide(pods, p)
	if !slices.Equal(res.Warnings, s.warnings) {
		for _, w := range res.Warnings {
			if !slices.Contains(s.warnings, w) {
				s.log.Warn("discovery: ignored an invalid pod annotation", "what", w)
			}
		}
		s.warnings = res.Warnings
	}
	s.counters.Decisions.Add(1)
	s.publish(res)
}
