"""Views: read stored result records and write tables, pages and charts; they never run a submission themselves
(remeasure has the evaluator time versions again, for `diff --measure` and `submit --best`)."""
