package scenario

// primaryTool is the tool whose ratios are the comparison (results.PrimaryTool).
const primaryTool = "protobench"

// HeadlineStep is the index of the step whose ratio the answer leads with
// (results.Summary.Answer): the first step without a matrix that compares two targets or more
// with our generator, else the first without a matrix that compares two targets, else -1.
func (s *Scenario) HeadlineStep() int {
	fallback := -1
	for i, st := range s.Steps {
		if st.Matrix != nil || len(st.Targets) < 2 {
			continue
		}
		tools := st.Tools
		if len(tools) == 0 || contains(tools, primaryTool) {
			return i
		}
		if fallback < 0 {
			fallback = i
		}
	}
	return fallback
}

// stepOrder is the order the plan runs the steps in: the headline step first, so a user has the
// answer in minutes and the explaining steps after, then the others as written. A headline step
// that takes its rates from another step (rate_from) stays where it is.
func (s *Scenario) stepOrder() []int {
	h := s.HeadlineStep()
	order := make([]int, 0, len(s.Steps))
	if h > 0 && s.Steps[h].RateFrom == nil {
		order = append(order, h)
	}
	for i := range s.Steps {
		if len(order) > 0 && i == order[0] {
			continue
		}
		order = append(order, i)
	}
	return order
}
