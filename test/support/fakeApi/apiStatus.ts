/** A refusal the simulated API server answers with a metav1.Status, as kube-apiserver does. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string = reason,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** The metav1.Status body of a failure. */
export function failureStatus(
  code: number,
  reason: string,
  message: string,
  details?: Record<string, unknown>,
) {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  };
}
