"""The measuring side of nvfp4-arena, laid out by which side of the process boundary each file runs on:
evaluator/ is the trusted evaluator process (inputs, references, checks, verdicts, records), worker/ the
untrusted process that imports a submission, views/ reads stored records into tables, pages and charts,
sweep/ spreads many runs over GPU lanes or Ray, and tools/ holds a developer's measuring and inspection
utilities. The modules at this top level are shared by both sides (the channel, device, slot layout, rules,
protocol and paths the worker and the evaluator both use) or by several trusted folders (results, sources, sol,
precheck); none of them imports from the folders."""
