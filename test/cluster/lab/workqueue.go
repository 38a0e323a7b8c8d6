package lab

import (
	"context"

	"k8s.io/client-go/util/workqueue"
)

// processNext takes one key from the queue and syncs it; a failed sync is retried with
// the queue's rate limit. It returns false once the queue is shut down or ctx ends. The
// lab's controllers (kubelet, scheduler, LoadBalancer allocator) run it in their workers.
func processNext(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string],
	sync func(context.Context, string) error, logf func(format string, args ...any), what string) bool {
	key, quit := queue.Get()
	if quit {
		return false
	}
	defer queue.Done(key)
	if err := sync(ctx, key); err != nil {
		if ctx.Err() != nil {
			return false
		}
		logf("%s %s: %v (retrying)", what, key, err)
		queue.AddRateLimited(key)
		return true
	}
	queue.Forget(key)
	return true
}
