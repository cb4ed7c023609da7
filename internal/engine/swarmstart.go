package engine

import "time"

// sharedStartLead is how far ahead the swarm engine sets the shared start of a split step's
// parts (OneOff.Parts, the generators' --start-at): each part is a service of its own, and
// before the instant every part's service must be created, its task scheduled and started on
// its node, and its generator connected. The parts then wait for it and measure one window; a
// part ready only after it starts at once and is flagged late-start. On three swarm nodes of one
// 2-core machine the parts were ready 0.6–0.9 s after the engine picked the instant, and 2.1 s
// on a node that first pulled the 176 MB protobench image (docs/swarm.md): 5 s leaves room for
// a slower pull or a busier machine, at the cost of about 4 s per split step.
const sharedStartLead = 5 * time.Second
