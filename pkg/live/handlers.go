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

func nodeEvents(mark func(...string)) cache.ResourceEventHandler {
	return handler(mark, func(n *stored[snapshot.Node]) []string { return []string{n.Name} })
}

func podEvents(mark func(...string)) cache.ResourceEventHandler {
	return handler(mark, func(p *stored[snapshot.Pod]) []string {
		if n := p.Of.Placement(); n != "" {
			return []string{n}
		}
		return nil
	})
}

func daemonSetEvents(mark func(...string)) cache.ResourceEventHandler {
	return handler(mark, func(*stored[snapshot.DaemonSet]) []string { return []string{daemonSetsChanged} })
}

// A new ControllerRevision is a new template: whether each driver pod runs
// the latest one may change, as when a DaemonSet changes.
func revisionEvents(mark func(...string)) cache.ResourceEventHandler {
	return handler(mark, func(*stored[snapshot.Revision]) []string { return []string{daemonSetsChanged} })
}

func upgradeEvents(mark func(...string)) cache.ResourceEventHandler {
	return handler(mark, func(e *stored[upgradeEvent]) []string { return []string{e.Of.Node} })
}

// handler marks the nodes of the object before and after each event.
func handler[T any](mark func(...string), nodes func(*stored[T]) []string) cache.ResourceEventHandler {
	of := func(obj any) []string {
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
