package reflection

// The schema's keys, for the test that the material's schema and Parse agree.
var (
	TopKeys      = topKeys
	LessonKeys   = lessonKeys
	CritiqueKeys = critiqueKeys
	RoundKeys    = roundKeys
	ValidityKeys = validityKeys
)
