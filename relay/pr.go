package relay

import "context"

// updatePullRequests publishes a 1619 for each open pull request on rt
// whose head branch moved past its last known tip.
func (r *Relay) updatePullRequests(ctx context.Context, rt gitRoute) {}
