/* Preloaded into the sanitizer pass's test processes: dlclose does nothing,
 * so the shared objects Open MPI and PMIx load at MPI_Init (their mca_*.so
 * components) are still mapped when LeakSanitizer reports at exit. Open MPI
 * 4.1 closes them at MPI_Finalize and has no parameter to keep them; the
 * leaks they made would then show as "<unknown module>" frames that no
 * suppression can name (scripts/sanitize/lsan.supp). Nothing in strata or
 * its tests relies on dlclose unloading anything. */
int dlclose(void *handle) {
  (void)handle;
  return 0;
}
