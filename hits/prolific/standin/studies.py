"""The Prolific stand-in's studies: create (UNPUBLISHED), list, retrieve, PATCH (places only grow), and
``transition`` (PUBLISH, PAUSE, START, STOP), with the status Prolific shows from the study's submissions."""

from __future__ import annotations

from hits.prolific.standin.common import (
    ACTIVE, APPROVED, AWAITING_REVIEW, COMPLETED, PAUSED, UNPUBLISHED, Refused, iso, new_id, whole,
)
from hits.prolific.standin.rates import least_maximum, reward_per_hour

STUDY_ACTIONS = ("PUBLISH", "PAUSE", "START", "STOP")
HOLDS_A_PLACE = (ACTIVE, AWAITING_REVIEW, APPROVED)
CODE_ACTIONS = {"MANUALLY_REVIEW": AWAITING_REVIEW, "AUTOMATICALLY_APPROVE": APPROVED}
GROUP_FILTERS = ("participant_group_allowlist", "participant_group_blocklist")


class Studies:
    """Mixed into ``ProlificStandIn``: its studies (``state['studies']``), read and changed under its lock."""

    def _study(self, study_id: str) -> dict:
        return self._find("studies", study_id, "study")

    def _submissions_of(self, study: dict) -> list[dict]:
        return [s for s in self.state["submissions"].values() if s["study_id"] == study["id"]]

    def study_status(self, study: dict) -> str:
        if study["status"] in (UNPUBLISHED, PAUSED) and not study["stopped"]:
            return study["status"]
        subs = self._submissions_of(study)
        waiting = any(s["status"] == AWAITING_REVIEW for s in subs)
        if not study["stopped"]:
            taken = sum(1 for s in subs if s["status"] in HOLDS_A_PLACE)
            if taken < study["total_available_places"] or any(s["status"] == ACTIVE for s in subs):
                return ACTIVE
        return AWAITING_REVIEW if waiting else COMPLETED

    def study_view(self, study: dict) -> dict:
        view = {k: v for k, v in study.items() if k not in ("stopped", "created_at", "published_at_epoch")}
        subs = self._submissions_of(study)
        view.update(
            status=self.study_status(study), places_taken=sum(1 for s in subs if s["status"] in HOLDS_A_PLACE),
            number_of_submissions=len(subs), total_cost=study["total_available_places"] * self._place_cost(study),
            date_created=iso(study["created_at"]), published_at=iso(study["published_at_epoch"]), **reward_per_hour(study, subs))
        return view

    def create_study(self, body: dict, now: float) -> dict:
        missing = [name for name in ("name", "description", "external_study_url", "estimated_completion_time",
                                     "reward", "total_available_places", "completion_codes") if body.get(name) in (None, "")]
        if missing:
            raise Refused(400, {name: ["This field is required."] for name in missing})
        url = str(body["external_study_url"])
        if not url.startswith(("http://", "https://")):
            raise Refused(400, {"external_study_url": [f"{url!r} is not an http(s) URL"]})
        codes = body["completion_codes"]
        if not isinstance(codes, list) or not codes:
            raise Refused(400, {"completion_codes": ["a list of at least one completion code"]})
        for code in codes:
            if not isinstance(code, dict) or not code.get("code"):
                raise Refused(400, {"completion_codes": [f"each needs a 'code': {code!r}"]})
            for action in code.get("actions") or []:
                if not isinstance(action, dict) or action.get("action") not in CODE_ACTIONS:
                    raise Refused(400, {"completion_codes": [
                        f"action {action!r}: the stand-in knows {', '.join(CODE_ACTIONS)}"]})
        estimated = whole(body["estimated_completion_time"], "estimated_completion_time", 1)
        maximum = body.get("maximum_allowed_time")
        maximum = least_maximum(estimated) if maximum is None else whole(maximum, "maximum_allowed_time", estimated)
        filters = body.get("filters") or []
        self._check_filters(filters)
        study = {
            "id": new_id(), "name": str(body["name"]), "internal_name": body.get("internal_name") or "",
            "description": str(body["description"]), "external_study_url": url,
            "prolific_id_option": body.get("prolific_id_option", "url_parameters"), "completion_codes": codes,
            "total_available_places": whole(body["total_available_places"], "total_available_places", 1),
            "estimated_completion_time": estimated, "maximum_allowed_time": maximum,
            "reward": whole(body["reward"], "reward", 0), "device_compatibility": body.get("device_compatibility") or [],
            "filters": filters, "project": body.get("project") or self.state["project_id"], "currency_code": self.currency,
            "status": UNPUBLISHED, "stopped": False, "created_at": now, "published_at_epoch": None,
        }
        self.state["studies"][study["id"]] = study
        return self.study_view(study)

    def _check_filters(self, filters) -> None:
        if not isinstance(filters, list):
            raise Refused(400, {"filters": ["a list of filters"]})
        for f in filters:
            if not isinstance(f, dict) or f.get("filter_id") not in GROUP_FILTERS:
                raise Refused(400, {"filters": [f"{f!r}: the stand-in knows the filters {', '.join(GROUP_FILTERS)}"]})
            values = f.get("selected_values")
            if not isinstance(values, list) or not values:
                raise Refused(400, {"filters": [f"{f['filter_id']}: selected_values must list group ids"]})
            unknown = [v for v in values if v not in self.state["groups"]]
            if unknown:
                raise Refused(400, {"filters": [f"{f['filter_id']}: no participant group {', '.join(map(str, unknown))}"]})

    def patch_study(self, study_id: str, body: dict) -> dict:
        study = self._study(study_id)
        if not isinstance(body, dict) or not body:
            raise Refused(400, "Nothing to update: send the fields to change")
        allowed = {"total_available_places", "name", "internal_name", "description"}
        unknown = sorted(set(body) - allowed)
        if unknown:
            raise Refused(400, {name: ["The stand-in cannot update this field."] for name in unknown})
        if "total_available_places" in body:
            places = whole(body["total_available_places"], "total_available_places", 1)
            if places < study["total_available_places"]:
                raise Refused(400, {"total_available_places": [
                    f"Places can only be increased ({study['total_available_places']} now, {places} asked)"]})
            if study["status"] != UNPUBLISHED and not study["stopped"]:
                extra = (places - study["total_available_places"]) * self._place_cost(study)
                if extra > self.available():
                    raise Refused(400, f"Insufficient funds: {places - study['total_available_places']} more places cost "
                                       f"{extra} cents with fees; the available balance is {self.available()} cents")
            study["total_available_places"] = places
        for name in ("name", "internal_name", "description"):
            if name in body:
                study[name] = str(body[name])
        return self.study_view(study)

    def transition_study(self, study_id: str, body: dict, now: float) -> dict:
        study = self._study(study_id)
        action = body.get("action") if isinstance(body, dict) else None
        if action not in STUDY_ACTIONS:
            raise Refused(400, {"action": [f"{action!r} is not one of {', '.join(STUDY_ACTIONS)}"]})
        status = self.study_status(study)
        if action == "PUBLISH":
            if status != UNPUBLISHED:
                raise Refused(400, f"The study is {status}: only an UNPUBLISHED study can be published")
            cost = study["total_available_places"] * self._place_cost(study)
            if cost > self.available():
                raise Refused(400, f"Insufficient funds: {study['total_available_places']} places cost {cost} cents with "
                                   f"fees; the available balance is {self.available()} cents. Top up the workspace.")
            study.update(status=ACTIVE, published_at_epoch=now)
        elif action == "PAUSE":
            if status != ACTIVE:
                raise Refused(400, f"The study is {status}: only an ACTIVE study can be paused")
            study["status"] = PAUSED
        elif action == "START":
            if status != PAUSED:
                raise Refused(400, f"The study is {status}: only a PAUSED study can be started again")
            study["status"] = ACTIVE
        else:
            if status not in (ACTIVE, PAUSED) or study["stopped"]:
                raise Refused(400, f"The study is {status}: only an ACTIVE or PAUSED study can be stopped")
            study["stopped"] = True
        return self.study_view(study)
