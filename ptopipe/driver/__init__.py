"""driver: what the commands do, as library functions below the command line (as a compiler
driver sits below its option parser): loading kernel files and their Scenarios
(:mod:`.loader`), the inputs and verdicts of ``.pto`` kernels (:mod:`.pto`), C++ kernel
files built and run in a child process (:mod:`.cpp`), the DSL programs of a file and their
static checks (:mod:`.programs`), a check of a kernel variant as a report row
(:mod:`.check`), kernel libraries with their summary and JUnit XML (:mod:`.library`), and
the engines that run a command's units (:mod:`.engine`).  ``ptopipe.cli`` parses the
arguments, calls these and prints; the layers above the runtime (report, mutate) call them
too."""
