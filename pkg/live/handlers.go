package live

import (
	"reflect"

	"k8s.io/client-go/tools/cache"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// The event handlers mark the nodes an event touches. Objects from the
// initial list are left to the first batch, which judges every node; an
// update that leaves the trimmed object as it was (a heartbeat, a status
// field no judge reads) marks nothing.

func nodeEvents(mark func(...item)) cache.ResourceEventHandler {
	return handler(mark, func(n *stored[snapshot.Node]) []item { return []item{judgeNode(n.Name)} })
}

func podEvents(mark func(...item)) cache.ResourceEventHandler {
	return handler(mark, podNodeItem)
}

// podNodeItem is the item of the pod's node; none while it is not placed.
func podNodeItem(p *stored[snapshot.Pod]) []item {
	if n := p.Of.Placement(); n != "" {
		return []item{judgeNode(n)}
	}
	return nil
}

func daemonSetEvents(mark func(...item)) cache.ResourceEventHandler {
	return handler(mark, func(*stored[snapshot.DaemonSet]) []item { return []item{{kind: daemonSetsChanged}} })
}

// A new ControllerRevision is a new template: whether each driver pod runs
// the latest one may change, as when a DaemonSet changes.
func revisionEvents(mark func(...item)) cache.ResourceEventHandler {
	return handler(mark, func(*stored[snapshot.Revision]) []item { return []item{{kind: daemonSetsChanged}} })
}

func upgradeEvents(mark func(...item)) cache.ResourceEventHandler {
	return handler(mark, func(e *stored[upgradeEvent]) []item { return []item{judgeNode(e.Of.Node)} })
}

// handler marks the items of the object before and after each event.
func handler[T any](mark func(...item), nodes func(*stored[T]) []item) cache.ResourceEventHandler {
	of := func(obj any) []item {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if s, ok := obj.(*stored[T]); ok {
			return nodes(s)
		}
		return nil
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if !initial {
				mark(of(obj)...)
			}
		},
		UpdateFunc: func(old, cur any) {
			o, n := old.(*stored[T]), cur.(*stored[T])
			if !reflect.DeepEqual(o.Of, n.Of) {
				mark(append(of(old), of(cur)...)...)
			}
		},
		DeleteFunc: func(obj any) { mark(of(obj)...) },
	}
}
