-- owner_attributes: the owner's attributes when the event was fanned out
-- (its deliveries created), which the kwork envelope renders (app,
-- environment, apiVersion). Every attempt renders these, so a retry sends
-- the bytes the first attempt sent whatever the owner is changed to
-- meanwhile. NULL (an event fanned out before this column, or never):
-- the owner's current attributes.
ALTER TABLE hookd_events ADD COLUMN owner_attributes TEXT;
