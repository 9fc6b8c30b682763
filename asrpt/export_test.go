package asrpt

import "github.com/gpusched/gpusched"

// PlanChoiceForTest returns the plan choice that s, built by NewPlanChooser, made for job id.
func PlanChoiceForTest(s gpusched.Scheduler, id gpusched.JobID) (int, bool) {
	return s.(*PlanChoice).Choice(id)
}

// FollowedForTest returns how many of s's calls followed their view's delta instead of walking
// its Pending list.
func FollowedForTest(s *Scheduler) int { return s.followed }

// PlanViewsForTest sets p's test switches (see PlanChoice.plain and the broken variants) and
// a function that sees each view p hands its inner scheduler.
func PlanViewsForTest(p *PlanChoice, plain, noPass, brokenHeld, brokenMoved bool, hook func(gpusched.View)) {
	p.plain, p.noPass, p.brokenHeld, p.brokenMoved, p.viewHook = plain, noPass, brokenHeld, brokenMoved, hook
}
