// promhpa's differential harness: test tooling, never part of the product.
//
// hack/build-tools.sh copies this file next to upstream's own pkg/controller/podautoscaler
// sources (from the Go module cache, at each release we decide as: 1.33 to 1.37) and builds
// main.go against them, so the code that decides here is upstream's, unchanged. Where the
// package's internals differ between releases (how the controller stores HPA selectors),
// one small selectors_*.go.in file per shape is copied beside this one. Each input line is one
// promhpa snapshot (JSON); the harness wires upstream's HorizontalController to fake
// clients that answer from the snapshot -- as upstream's horizontal_test.go does -- runs
// one reconcileAutoscaler, and prints what it wrote (scale, status, events) and remembered
// (recommendations, scale events) in promhpa's `decide` output format.
//
// Upstream reads the wall clock, so every time in the snapshot is shifted by a whole
// number of seconds onto the current second before the reconcile, and every time in the
// answer is shifted back; a line is only started in the first 0.7 s of a second, so a
// time upstream takes during the reconcile lands on the snapshot's `now`.
package podautoscaler

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	scalefake "k8s.io/client-go/scale/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	autoscalingapiv2 "k8s.io/kubernetes/pkg/apis/autoscaling/v2"
	"k8s.io/kubernetes/pkg/controller/podautoscaler/metrics"
	"k8s.io/kubernetes/pkg/controller/podautoscaler/monitor"
	"k8s.io/kubernetes/pkg/controller/util/selectors"
	cmapi "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	emapi "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	metricsapi "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
	cmfake "k8s.io/metrics/pkg/client/custom_metrics/fake"
	emfake "k8s.io/metrics/pkg/client/external_metrics/fake"

	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
)

type snapMetricError struct {
	Source  string `json:"source"`
	Name    string `json:"name"`
	Message string `json:"message"`
}

type snapRecommendation struct {
	Replicas  int32       `json:"replicas"`
	Timestamp metav1.Time `json:"timestamp"`
}

type snapScaleEvent struct {
	ReplicaChange int32       `json:"replicaChange"`
	Timestamp     metav1.Time `json:"timestamp"`
	Outdated      bool        `json:"outdated,omitempty"`
}

type snapHistory struct {
	Recommendations *[]snapRecommendation `json:"recommendations"`
	ScaleUpEvents   []snapScaleEvent      `json:"scaleUpEvents"`
	ScaleDownEvents []snapScaleEvent      `json:"scaleDownEvents"`
}

type snapController struct {
	Tolerance                    *float64        `json:"tolerance"`
	CPUInitializationPeriod      *metav1.Duration `json:"cpuInitializationPeriod"`
	InitialReadinessDelay        *metav1.Duration `json:"initialReadinessDelay"`
	DownscaleStabilizationWindow *metav1.Duration `json:"downscaleStabilizationWindow"`
	FeatureGates                 map[string]bool  `json:"featureGates"`
}

type snapshot struct {
	Now             metav1.Time                           `json:"now"`
	Controller      snapController                        `json:"controller"`
	HPA             autoscalingv2.HorizontalPodAutoscaler `json:"hpa"`
	Scale           *autoscalingv1.Scale                  `json:"scale"`
	ScaleError      *string                               `json:"scaleError"`
	ScaleUpdateErr  *string                               `json:"scaleUpdateError"`
	Pods            []v1.Pod                              `json:"pods"`
	PodMetrics      []metricsapi.PodMetrics               `json:"podMetrics"`
	CustomMetrics   []cmapi.MetricValue                   `json:"customMetrics"`
	ExternalMetrics []emapi.ExternalMetricValue           `json:"externalMetrics"`
	MetricErrors    []snapMetricError                     `json:"metricErrors"`
	History         *snapHistory                          `json:"history"`
	SelectingHPAs   []string                              `json:"selectingHPAs"`
}

type outEvent struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type outcome struct {
	DesiredReplicas *int32                                    `json:"desiredReplicas"`
	Rescale         bool                                      `json:"rescale"`
	Status          autoscalingv2.HorizontalPodAutoscalerStatus `json:"status"`
	Events          []outEvent                                `json:"events"`
	History         map[string]interface{}                    `json:"history"`
	Error           string                                    `json:"error,omitempty"`
}

// shiftTimes moves every RFC 3339 string in a JSON tree by d.
func shiftTimes(v interface{}, d time.Duration) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, x := range t {
			t[k] = shiftTimes(x, d)
		}
	case []interface{}:
		for i, x := range t {
			t[i] = shiftTimes(x, d)
		}
	case string:
		if len(t) >= 20 && t[4] == '-' && t[10] == 'T' {
			if ts, err := time.Parse(time.RFC3339Nano, t); err == nil {
				return ts.Add(d).UTC().Format(time.RFC3339Nano)
			}
		}
	}
	return v
}

func failure(s *snapshot, source, name string) error {
	for _, e := range s.MetricErrors {
		if e.Source == source && e.Name == name {
			return fmt.Errorf("%s", e.Message)
		}
	}
	return nil
}

// PromhpaHarness reads snapshots (one JSON document a line) and writes one outcome a line.
func PromhpaHarness(in io.Reader, out io.Writer) error {
	monitor.Register()
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	enc := json.NewEncoder(out)
	for scanner.Scan() {
		for time.Now().Nanosecond() > 700_000_000 { // start early in a second (see above)
			time.Sleep(10 * time.Millisecond)
		}
		res, err := runOne(scanner.Bytes())
		if err != nil {
			res = map[string]interface{}{"error": err.Error()}
		}
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	return scanner.Err()
}

// The gates that change HPA decisions, where this release knows them.
var decisionGates = []string{
	"HPAConfigurableTolerance", "HPAScaleToZero", "HPAGeneration", "HPAOptimizedSelectorStore", "PodLevelResources",
}

// Gates that depend on a decision gate (and change no HPA decision): a controller that ran
// with the decision gate off had them off too, or its release refuses to start.
var dependentGates = map[string][]string{
	"PodLevelResources": {
		"InPlacePodLevelResourcesVerticalScaling", "PodLevelResourceManagers",
		"PodLevelResourcesFixDefaulting", "PodLevelResourcesFixKubeletQOSClass",
	},
}

// gateDefaults holds this release's own default of each decision gate it knows and does
// not lock, read once before any snapshot sets one (SetFromMap lasts for the process).
var gateDefaults map[string]bool

// gatesFor is every known, unlocked decision gate at this release's default, with the
// snapshot's value where it gives one: a gate one snapshot turned off is back on for the next.
func gatesFor(wanted map[string]bool) map[string]bool {
	if gateDefaults == nil {
		gateDefaults = map[string]bool{}
		all := utilfeature.DefaultMutableFeatureGate.GetAll()
		names := append([]string{}, decisionGates...)
		for _, deps := range dependentGates {
			names = append(names, deps...)
		}
		for _, name := range names {
			if spec, ok := all[featuregate.Feature(name)]; ok && !spec.LockToDefault {
				gateDefaults[name] = spec.Default
			}
		}
	}
	gates := map[string]bool{}
	for name, def := range gateDefaults {
		gates[name] = def
	}
	for _, name := range decisionGates {
		v, ok := wanted[name]
		if _, known := gateDefaults[name]; !ok || !known {
			continue
		}
		gates[name] = v
		if !v {
			for _, dep := range dependentGates[name] {
				if _, known := gateDefaults[dep]; known {
					gates[dep] = false
				}
			}
		}
	}
	return gates
}

func runOne(line []byte) (interface{}, error) {
	var raw map[string]interface{}
	if err := json.Unmarshal(line, &raw); err != nil {
		return nil, err
	}
	var probe struct {
		Now metav1.Time `json:"now"`
	}
	if err := json.Unmarshal(line, &probe); err != nil {
		return nil, err
	}
	shift := time.Now().Truncate(time.Second).Sub(probe.Now.Time)
	shifted, _ := json.Marshal(shiftTimes(raw, shift))
	var s snapshot
	if err := json.Unmarshal(shifted, &s); err != nil {
		return nil, err
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(gatesFor(s.Controller.FeatureGates)); err != nil {
		return nil, err
	}
	res, err := reconcileOnce(&s)
	if err != nil {
		return nil, err
	}
	back, _ := json.Marshal(res)
	var tree interface{}
	_ = json.Unmarshal(back, &tree)
	return shiftTimes(tree, -shift), nil
}

func reconcileOnce(s *snapshot) (*outcome, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hpa := s.HPA.DeepCopy()
	autoscalingapiv2.SetObjectDefaults_HorizontalPodAutoscaler(hpa) // as the API server stores it
	key := hpa.Namespace + "/" + hpa.Name

	kube := fake.NewSimpleClientset()
	var written *autoscalingv2.HorizontalPodAutoscaler
	kube.PrependReactor("update", "horizontalpodautoscalers", func(a core.Action) (bool, runtime.Object, error) {
		written = a.(core.UpdateAction).GetObject().(*autoscalingv2.HorizontalPodAutoscaler).DeepCopy()
		return true, written, nil
	})

	scales := &scalefake.FakeScaleClient{}
	var rescaled *int32
	scales.AddReactor("get", "*", func(a core.Action) (bool, runtime.Object, error) {
		if s.ScaleError != nil {
			return true, nil, fmt.Errorf("%s", *s.ScaleError)
		}
		return true, s.Scale.DeepCopy(), nil
	})
	scales.AddReactor("update", "*", func(a core.Action) (bool, runtime.Object, error) {
		if s.ScaleUpdateErr != nil {
			return true, nil, fmt.Errorf("%s", *s.ScaleUpdateErr)
		}
		obj := a.(core.UpdateAction).GetObject().(*autoscalingv1.Scale)
		r := obj.Spec.Replicas
		rescaled = &r
		return true, obj, nil
	})

	// the k-th resource metrics fetch belongs to the k-th Resource/ContainerResource spec
	var resourceSpecs []autoscalingv2.MetricSpec
	for _, m := range hpa.Spec.Metrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType || m.Type == autoscalingv2.ContainerResourceMetricSourceType {
			resourceSpecs = append(resourceSpecs, m)
		}
	}
	resourceCalls := 0
	podMetrics := &metricsfake.Clientset{}
	podMetrics.AddReactor("list", "pods", func(a core.Action) (bool, runtime.Object, error) {
		defer func() { resourceCalls++ }()
		if resourceCalls < len(resourceSpecs) {
			spec := resourceSpecs[resourceCalls]
			var err error
			if spec.Type == autoscalingv2.ResourceMetricSourceType {
				err = failure(s, "Resource", string(spec.Resource.Name))
			} else {
				err = failure(s, "ContainerResource", string(spec.ContainerResource.Name))
			}
			if err != nil {
				return true, nil, err
			}
		}
		// the metrics API answers with each pod's labels (the generated fake filters on them)
		list := &metricsapi.PodMetricsList{}
		for _, m := range s.PodMetrics {
			m := *m.DeepCopy()
			for _, p := range s.Pods {
				if p.Name == m.Name {
					m.Labels = p.Labels
				}
			}
			list.Items = append(list.Items, m)
		}
		return true, list, nil
	})
	custom := &cmfake.FakeCustomMetricsClient{}
	custom.AddReactor("get", "*", func(a core.Action) (bool, runtime.Object, error) {
		get := a.(cmfake.GetForAction)
		name, metric := get.GetName(), get.GetMetricName()
		resource := get.GetResource().Resource
		source := "Object"
		if resource == "pods" && name == "*" {
			source = "Pods"
		}
		if err := failure(s, source, metric); err != nil {
			return true, nil, err
		}
		list := &cmapi.MetricValueList{}
		for _, m := range s.CustomMetrics {
			if m.Metric.Name != metric {
				continue
			}
			if source == "Pods" && m.DescribedObject.Kind == "Pod" {
				list.Items = append(list.Items, m)
			}
			if source == "Object" && m.DescribedObject.Name == name && m.DescribedObject.Kind != "Pod" {
				list.Items = append(list.Items, m)
			}
		}
		return true, list, nil
	})
	external := &emfake.FakeExternalMetricsClient{}
	external.AddReactor("list", "*", func(a core.Action) (bool, runtime.Object, error) {
		metric := a.GetResource().Resource
		if err := failure(s, "External", metric); err != nil {
			return true, nil, err
		}
		// the external metrics API selects series by the metric's selector
		sel := a.(core.ListAction).GetListRestrictions().Labels
		list := &emapi.ExternalMetricValueList{}
		for _, m := range s.ExternalMetrics {
			if m.MetricName == metric && (sel == nil || sel.Matches(labels.Set(m.MetricLabels))) {
				list.Items = append(list.Items, m)
			}
		}
		return true, list, nil
	})

	factory := informers.NewSharedInformerFactory(kube, 0)
	hpaInformer := factory.Autoscaling().V2().HorizontalPodAutoscalers()
	podInformer := factory.Core().V1().Pods()
	d := func(p *metav1.Duration, def time.Duration) time.Duration {
		if p == nil {
			return def
		}
		return p.Duration
	}
	tolerance := 0.1
	if s.Controller.Tolerance != nil {
		tolerance = *s.Controller.Tolerance
	}
	a := NewHorizontalController(
		ctx,
		kube.CoreV1(),
		scales,
		kube.AutoscalingV2(),
		testrestmapper.TestOnlyStaticRESTMapper(legacyscheme.Scheme),
		metrics.NewRESTMetricsClient(podMetrics.MetricsV1beta1(), custom, external),
		hpaInformer,
		podInformer,
		15*time.Second,
		d(s.Controller.DownscaleStabilizationWindow, 5*time.Minute),
		tolerance,
		d(s.Controller.CPUInitializationPeriod, 5*time.Minute),
		d(s.Controller.InitialReadinessDelay, 30*time.Second),
	)
	recorder := record.NewFakeRecorder(1000)
	a.eventRecorder = recorder
	a.monitor = monitor.New()
	if err := hpaInformer.Informer().GetIndexer().Add(hpa); err != nil {
		return nil, err
	}
	for i := range s.Pods {
		if err := podInformer.Informer().GetIndexer().Add(&s.Pods[i]); err != nil {
			return nil, err
		}
	}
	self := selectors.Key{Namespace: hpa.Namespace, Name: hpa.Name}
	promhpaRegisterSelector(a, self, labels.Nothing())
	if len(s.SelectingHPAs) > 1 && s.Scale != nil {
		if sel, err := labels.Parse(s.Scale.Status.Selector); err == nil {
			for _, other := range s.SelectingHPAs {
				ns, name, _ := strings.Cut(other, "/")
				if ns == hpa.Namespace && name == hpa.Name {
					continue
				}
				k := selectors.Key{Namespace: ns, Name: name}
				promhpaRegisterSelector(a, k, sel)
			}
		}
	}
	if s.History != nil {
		if s.History.Recommendations != nil {
			recs := []timestampedRecommendation{}
			for _, r := range *s.History.Recommendations {
				recs = append(recs, timestampedRecommendation{r.Replicas, r.Timestamp.Time})
			}
			a.recommendations[key] = recs
		}
		for _, e := range s.History.ScaleUpEvents {
			a.scaleUpEvents[key] = append(a.scaleUpEvents[key], timestampedScaleEvent{e.ReplicaChange, e.Timestamp.Time, e.Outdated})
		}
		for _, e := range s.History.ScaleDownEvents {
			a.scaleDownEvents[key] = append(a.scaleDownEvents[key], timestampedScaleEvent{e.ReplicaChange, e.Timestamp.Time, e.Outdated})
		}
	}

	res := &outcome{Status: s.HPA.Status, Events: []outEvent{}}
	if err := a.reconcileAutoscaler(ctx, hpa, key); err != nil {
		res.Error = err.Error()
	}
	if written != nil {
		res.Status = written.Status
	}
	if rescaled != nil {
		res.Rescale = true
		res.DesiredReplicas = rescaled
	}
	close(recorder.Events)
	for e := range recorder.Events {
		parts := strings.SplitN(e, " ", 3)
		for len(parts) < 3 {
			parts = append(parts, "")
		}
		res.Events = append(res.Events, outEvent{parts[0], parts[1], parts[2]})
	}
	res.History = map[string]interface{}{}
	if recs, ok := a.recommendations[key]; ok {
		out := []map[string]interface{}{}
		for _, r := range recs {
			out = append(out, map[string]interface{}{"replicas": r.recommendation, "timestamp": metav1.NewTime(r.timestamp)})
		}
		res.History["recommendations"] = out
	}
	for name, events := range map[string][]timestampedScaleEvent{"scaleUpEvents": a.scaleUpEvents[key], "scaleDownEvents": a.scaleDownEvents[key]} {
		out := []map[string]interface{}{}
		for _, e := range events {
			m := map[string]interface{}{"replicaChange": e.replicaChange, "timestamp": metav1.NewTime(e.timestamp)}
			if e.outdated {
				m["outdated"] = true
			}
			out = append(out, m)
		}
		res.History[name] = out
	}
	return res, nil
}
