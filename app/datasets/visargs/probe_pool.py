"""The statements VisArgs' probes plant: visual premises an image could plausibly show, and commonsense
premises that sound like a reason, none supported by any particular image or argument. A probe draws one
per gold item (app.bias.probes.pick), so no single sentence marks a probe."""

VISUAL = (
    "A small brown dog sleeps in the lower left corner", "A red bicycle leans against a wall",
    "A woman in a yellow raincoat holds an umbrella", "Two children play with a ball on the grass",
    "A clock on the wall shows ten past three", "A flock of birds flies across the sky",
    "A stack of books sits on a wooden table", "A man in a grey suit checks his phone",
    "A lit candle stands beside a window", "A cat watches from the windowsill",
    "An open laptop shows a bar chart", "A paper cup of coffee sits on a desk",
    "A green bus passes in the background", "A crowd of people waits at a crossing",
    "A small sailboat floats on calm water", "A basket of apples rests on the floor",
    "Snow covers the roofs of the houses", "A hand holds a phone with a cracked screen",
    "A wind turbine turns on a distant hill", "A police car is parked by the road",
    "A bowl of soup steams on the table", "A child holds a red balloon",
    "A rainbow arches over a field", "Footprints lead across the sand",
    "A pair of glasses lies on an open newspaper", "An old man feeds pigeons from a bench",
    "A traffic light shows red", "A potted plant stands in the corner",
    "A lighthouse stands on the rocks", "A white van is parked outside a shop",
    "A girl wears a blue school uniform", "A map is pinned to the wall",
    "Rain streaks down the window", "A guitar leans against a chair",
    "A dog on a leash pulls its owner forward", "Smoke rises from a factory chimney",
)

COMMONSENSE = (
    "People trust brands that advertise on television", "Most people read the small print before buying",
    "Expensive products always last longer", "Children copy what their parents eat",
    "People spend more when they are in a hurry", "City dwellers care more about the environment than others",
    "A product that sells out must be good", "People prefer things sold in green packaging",
    "Most shoppers compare prices online first", "Older people distrust new technology",
    "Sports fans buy whatever their team promotes", "People who exercise daily sleep better",
    "Bottled water is cleaner than tap water", "People remember jokes better than facts",
    "Most accidents happen close to home", "Homemade food is always healthier",
    "Animals in adverts make people donate more", "Handwritten notes seem more honest than printed ones",
    "People follow advice printed on posters", "Cheap flights make people travel more",
    "Busy people skip breakfast", "Students work better with music on",
    "Recycled products cost more than new ones", "Families in the countryside own more cars",
    "People believe numbers printed in bold", "Morning light makes people more cheerful",
    "Bright colours make food look tastier", "People trust a product a scientist recommends",
    "Small shops treat their customers better", "Most people do their shopping at weekends",
    "Saving money is harder for young people", "Loud music makes shoppers buy faster",
    "Public transport is slower than driving", "Every household owns a smartphone",
    "People who recycle also save energy", "Anyone who owns a bicycle distrusts newspapers",
)
